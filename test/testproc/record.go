package testproc

import (
	"encoding/json"
	"fmt"
)

// Record is one line of a daemon's log. Fields is the line decoded as a
// JSON object, nil when the line is not one.
type Record struct {
	Line   []byte
	Fields map[string]any
}

func parseRecord(line []byte) Record {
	r := Record{Line: append([]byte(nil), line...)}
	var f map[string]any
	if json.Unmarshal(r.Line, &f) == nil {
		r.Fields = f
	}
	return r
}

// Msg returns the record's "msg" field, "" when it has none.
func (r Record) Msg() string {
	s, _ := r.Fields["msg"].(string)
	return s
}

// Str returns the field key formatted with fmt.Sprint ("<nil>" when the
// record has no such field).
func (r Record) Str(key string) string { return fmt.Sprint(r.Fields[key]) }

// Decode unmarshals the line into v.
func (r Record) Decode(v any) error { return json.Unmarshal(r.Line, v) }
