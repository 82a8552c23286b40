package confkeys

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

type item struct {
	Name string `yaml:"name"`
	Path string `yaml:"path"`
}

// entry may be written as its name alone (ScalarForm).
type entry struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

func (entry) ConfScalarForm() {}

type doc struct {
	Entries   []entry           `yaml:"entries"`
	Count     int               `yaml:"count"`
	On        *bool             `yaml:"on"`
	Tags      []string          `yaml:"tags"`
	Log       inner             `yaml:"log"`
	Listeners []item            `yaml:"listeners"`
	Timeout   time.Duration     `yaml:"timeout"`
	Labels    map[string]string `yaml:"labels"`
	Ptr       *inner            `yaml:"ptr"`
	Skip      string            `yaml:"-"`
}

func TestCheckYAML(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // error lines, in order
	}{
		{"Clean", "log: {level: info}\nlisteners: [{name: a}]\ntimeout: 1s\nlabels: {anything: x}\nptr: {format: json}\n", nil},
		{"TopLevel", "listners:\n  - name: a\n", []string{`f.yaml:1: unknown key "listners" (did you mean "listeners"?)`}},
		{"Nested", "log:\n  levle: debug\n", []string{`f.yaml:2: unknown key "log.levle" (did you mean "log.level"?)`}},
		{"InList", "listeners:\n  - name: a\n  - nmae: b\n", []string{`f.yaml:3: unknown key "listeners[1].nmae" (did you mean "listeners[1].name"?)`}},
		{"ThroughPointer", "ptr:\n  formt: x\n", []string{`f.yaml:2: unknown key "ptr.formt" (did you mean "ptr.format"?)`}},
		{"NothingClose", "zzzzzzzz: 1\n", []string{`f.yaml:1: unknown key "zzzzzzzz"`}},
		{"DashTagIsNotAKey", "skip: 1\n", []string{`f.yaml:1: unknown key "skip"`}},
		{"Several", "levle: 1\nlog: {formatt: x}\n", []string{`f.yaml:1: unknown key "levle"`, `f.yaml:2: unknown key "log.formatt" (did you mean "log.format"?)`}},
		{"Values", "count: 3\non: true\ntimeout: 0\ntags: a,b\nlog:\n  level:\n", nil},
		{"NotAnInteger", "count: many\n", []string{`f.yaml:1: count: "many" wants an integer (64-bit)`}},
		{"NotABool", "on: yes please\n", []string{`f.yaml:1: on: "yes please" wants true or false`}},
		{"BareDuration", "timeout: 30\n", []string{`f.yaml:1: timeout: "30" wants a duration with a unit, such as 500ms, 30s or 5m`}},
		{"MappingForScalar", "count: {a: 1}\n", []string{`f.yaml:1: count: "" wants a single value, not a mapping or list`}},
		{"ScalarForList", "listeners: x\n", []string{`f.yaml:1: listeners: "x" wants a list`}},
		{"ScalarForStruct", "log: debug\n", []string{`f.yaml:1: log: "debug" wants a mapping of settings`}},
		{"ScalarForm", "entries:\n  - just-a-name\n  - {name: b, key: k}\n", nil},
		{"ScalarFormTypo", "entries:\n  - a\n  - {name: b, kye: k}\n", []string{`f.yaml:3: unknown key "entries[1].kye" (did you mean "entries[1].key"?)`}},
		{"ScalarFormNotAList", "log: [a]\n", []string{`f.yaml:1: log: "" wants a mapping of settings`}},
		{"Unparsable", "a: [", nil},
		{"Empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckYAML("f.yaml", []byte(tc.in), &doc{}, "yaml")
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
				var uk *UnknownKeyError
				var ve *ValueError
				if !errors.As(err, &uk) && !errors.As(err, &ve) {
					t.Errorf("error %v is no *UnknownKeyError or *ValueError", err)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestNearest(t *testing.T) {
	if got := Nearest("queus", []string{"provider", "max_queue_depth"}); got != "max_queue_depth" {
		t.Errorf("Nearest(queus) by word = %q, want max_queue_depth", got)
	}
	valid := []string{"listeners", "level", "queues", "queue_depth", "data_dir"}
	for in, want := range map[string]string{
		"listners": "listeners", "levle": "level", "queus": "queues", "LEVEL": "level",
		"datadir": "data_dir", "queue_dept": "queue_depth", "xyz": "", "transport": "",
	} {
		if got := Nearest(in, valid); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", in, got, want)
		}
	}
}
