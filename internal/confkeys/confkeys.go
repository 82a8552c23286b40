package confkeys

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
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
	walk(doc.Content[0], reflect.TypeOf(v), tag, "", func(n *yaml.Node, path, key string, valid []string) {
		errs = append(errs, &UnknownKeyError{File: file, Line: n.Line, Key: join(path, key), Suggest: prefixed(path, Nearest(key, valid))})
	})
	return errors.Join(errs...)
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

// walk visits n as a value of type t, calling bad for each mapping key
// that t has no field for.
func walk(n *yaml.Node, t reflect.Type, tag, path string, bad func(n *yaml.Node, path, key string, valid []string)) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || n == nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == durationType || n.Kind != yaml.MappingNode {
			return
		}
		fields := Fields(t, tag)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // merge key: its mapping's keys are this struct's
				walk(val, t, tag, path, bad)
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				bad(k, path, k.Value, keys(fields))
				continue
			}
			walk(val, ft, tag, join(path, k.Value), bad)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, e := range n.Content {
			walk(e, t.Elem(), tag, fmt.Sprintf("%s[%d]", path, i), bad)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walk(n.Content[i+1], t.Elem(), tag, join(path, n.Content[i].Value), bad)
		}
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
