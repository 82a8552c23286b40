package confkeys

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// UnknownKeyError is one key that no setting names.
type UnknownKeyError struct {
	// File names the document ("" when it has none).
	File string
	// Line is the key's 1-based line in File (0: unknown).
	Line int
	// Key is the key's full path, e.g. "transport.queus" or
	// "volumes[1].nmae".
	Key string
	// Suggest is the nearest valid key at the same level ("" when none is
	// close).
	Suggest string
}

func (e *UnknownKeyError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "unknown key %q", e.Key)
	if e.Suggest != "" {
		fmt.Fprintf(&b, " (did you mean %q?)", e.Suggest)
	}
	return b.String()
}

// CheckYAML reports every mapping key of the YAML document data that no
// field of v's type (a struct or pointer to one) names under the struct
// tag tag ("yaml", "mapstructure"). file names the document in errors.
// The result joins one *UnknownKeyError per unknown key (nil: all keys
// known); a document that does not parse is not reported here (the
// decoder that reads it says why).
func CheckYAML(file string, data []byte, v any, tag string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	var errs []error
	c := checker{tag: tag,
		bad: func(n *yaml.Node, path, key string, valid []string) {
			errs = append(errs, &UnknownKeyError{File: file, Line: n.Line, Key: join(path, key), Suggest: prefixed(path, Nearest(key, valid))})
		},
		badValue: func(n *yaml.Node, path, want string) {
			errs = append(errs, &ValueError{File: file, Line: n.Line, Key: path, Value: n.Value, Want: want})
		},
	}
	c.walk(doc.Content[0], reflect.TypeOf(v), "")
	return errors.Join(errs...)
}

// ValueError is a value that does not parse as its setting's type.
type ValueError struct {
	File  string
	Line  int
	Key   string
	Value string // the scalar as written ("" for a mapping or list)
	Want  string // what the setting takes ("an integer", "true or false", …)
}

func (e *ValueError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%s: %q wants %s", e.Key, e.Value, e.Want)
	return b.String()
}

// ParseScalar checks that the text s parses as a value of type t the way
// a configuration decoder reads it, and says what t takes when it does
// not ("" when it does). Durations need a unit ("30s"; a bare 0 is
// allowed): a bare number would silently be nanoseconds. Strings and
// other types accept anything.
func ParseScalar(t reflect.Type, s string) (want string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType {
		if s == "0" {
			return ""
		}
		if _, err := time.ParseDuration(s); err != nil {
			return "a duration with a unit, such as 500ms, 30s or 5m"
		}
		return ""
	}
	switch t.Kind() {
	case reflect.Bool:
		if _, err := strconv.ParseBool(s); err != nil {
			return "true or false"
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(s, 0, t.Bits()); err != nil {
			return fmt.Sprintf("an integer (%d-bit)", t.Bits())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if _, err := strconv.ParseUint(s, 0, t.Bits()); err != nil {
			return fmt.Sprintf("a non-negative integer (%d-bit)", t.Bits())
		}
	case reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(s, t.Bits()); err != nil {
			return "a number"
		}
	}
	return ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func prefixed(path, key string) string {
	if key == "" {
		return ""
	}
	return join(path, key)
}

var durationType = reflect.TypeOf(time.Duration(0))

// ScalarForm is implemented by a setting type (a struct) that may also be
// written as one scalar, such as rdmablkd's subsystem host entry: the host
// NQN alone, or a mapping with the NQN and its secrets. CheckYAML accepts
// a scalar for it; the configuration decoder must convert it (a decode
// hook).
type ScalarForm interface{ ConfScalarForm() }

var scalarFormType = reflect.TypeOf((*ScalarForm)(nil)).Elem()

// checker walks a document next to a type.
type checker struct {
	tag      string
	bad      func(n *yaml.Node, path, key string, valid []string)
	badValue func(n *yaml.Node, path, want string)
}

// walk visits n as a value of type t at path, reporting keys t has no
// field for and scalars that do not parse as t.
func (c *checker) walk(n *yaml.Node, t reflect.Type, path string) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || n == nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // "key:" with no value: the default
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == durationType {
			c.scalar(n, t, path)
			return
		}
		if n.Kind == yaml.ScalarNode && t.Implements(scalarFormType) {
			return // the scalar form of a setting that also takes a mapping
		}
		if n.Kind != yaml.MappingNode {
			c.badValue(n, path, "a mapping of settings")
			return
		}
		fields := Fields(t, c.tag)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // merge key: its mapping's keys are this struct's
				c.walk(val, t, path)
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				c.bad(k, path, k.Value, keys(fields))
				continue
			}
			c.walk(val, ft, join(path, k.Value))
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.ScalarNode && t.Elem().Kind() == reflect.String {
			return // "a,b": decoders split a string into a list of strings
		}
		if n.Kind != yaml.SequenceNode {
			c.badValue(n, path, "a list")
			return
		}
		for i, e := range n.Content {
			c.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.badValue(n, path, "a mapping")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			c.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
		}
	case reflect.Interface:
	default:
		c.scalar(n, t, path)
	}
}

// scalar checks a leaf value.
func (c *checker) scalar(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.ScalarNode {
		c.badValue(n, path, "a single value, not a mapping or list")
		return
	}
	if want := ParseScalar(t, n.Value); want != "" {
		c.badValue(n, path, want)
	}
}

// Fields returns the settings of struct type t: key name (from tag, else
// the lower-cased field name) to the field's type. Fields tagged "-" and
// unexported fields are left out.
func Fields(t reflect.Type, tag string) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get(tag), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") || strings.Contains(opts, "squash") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range Fields(ft, tag) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func keys(m map[string]reflect.Type) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Nearest returns the candidate closest to s by edit distance
// (Levenshtein with transpositions, case-insensitive), or "" when none is
// within about a third of s's length (at least 2 edits allowed). When no
// whole candidate is that close, a candidate one of whose '_'-separated
// words is within one edit of s is returned ("queus" → "max_queue_depth").
// Ties go to the first candidate in order.
func Nearest(s string, candidates []string) string {
	best, bestD := "", max(2, (len(s)+2)/3)+1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		if d := distance(ls, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" || len(ls) < 4 {
		return best
	}
	for _, c := range candidates {
		for _, w := range strings.Split(strings.ToLower(c), "_") {
			if len(w) >= 4 && distance(ls, w) <= 1 {
				return c
			}
		}
	}
	return ""
}

// distance is the Levenshtein distance between a and b, where swapping
// two adjacent characters counts as one edit ("levle" → "level").
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
