package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Job file errors say what is wrong in the file's terms: the line, the
// field as it is written there ("require.memory", "args[2]") and what it
// should hold, never a Go type or a decoder's name.

// valueError is what the job file's own value types (sizes, durations)
// return from YAML: the line and text of the value, for the message to
// name its field.
type valueError struct {
	line  int
	value string // a scalar's text, "" for a list or map
	err   error
}

func (e *valueError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *valueError) Unwrap() error { return e.err }

// fileIndex knows where each field of a job file is: the line of each key
// and list item, by its path ("nodes", "require.cores", "args[1]").
type fileIndex struct {
	line  map[string]int
	paths []fieldAt // in the file's order
}

type fieldAt struct {
	path  string
	line  int    // of the value
	value string // a scalar's text
	kind  yaml.Kind
}

// indexFile reads the fields of a JSON or YAML job file; nil when it does
// not parse.
func indexFile(b []byte) *fileIndex {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	ix := &fileIndex{line: map[string]int{}}
	root := doc.Content[0]
	ix.paths = append(ix.paths, fieldAt{"", root.Line, root.Value, root.Kind})
	ix.walk("", root)
	return ix
}

func (ix *fileIndex) walk(path string, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if _, dup := ix.line[p]; !dup {
				ix.line[p] = k.Line
			}
			ix.paths = append(ix.paths, fieldAt{p, v.Line, v.Value, v.Kind})
			ix.walk(p, v)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			ix.line[p] = v.Line
			ix.paths = append(ix.paths, fieldAt{p, v.Line, v.Value, v.Kind})
			ix.walk(p, v)
		}
	}
}

// fieldOn is the field whose value is on line: when the line has several
// (a one-line JSON file, a flow list), the first holding the scalar value,
// or with value "", the innermost list or map starting there (their list
// when there are several in one). "" if none, or for the whole document.
func (ix *fileIndex) fieldOn(line int, value string) string {
	if ix == nil {
		return ""
	}
	var found []string
	last := ""
	for _, f := range ix.paths {
		if f.line != line {
			continue
		}
		last = f.path
		scalar := f.kind == yaml.ScalarNode
		switch {
		case value != "" && scalar && f.value == value:
			return f.path
		case value == "" && !scalar:
			found = append(found, f.path)
		}
	}
	if n := len(found); n > 0 {
		p := parentOf(found[n-1])
		if n > 1 && p != "" && parentOf(found[n-2]) == p {
			return p // one of several items on the line
		}
		return found[n-1]
	}
	if value == "" {
		return ""
	}
	return last
}

// parentOf is the path of the list or map holding the field at path.
func parentOf(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// maxFileErrors bounds the errors one message lists.
const maxFileErrors = 3

var (
	yamlTypeMsg  = regexp.MustCompile("(?s)^line (\\d+): cannot unmarshal (\\S+)(?: `(.*)`)? into (.+)$")
	yamlFieldMsg = regexp.MustCompile(`^line (\d+): field (.*) not found in type \S+$`)
	yamlDupMsg   = regexp.MustCompile(`^line (\d+): mapping key "(.*)" already defined at line (\d+)$`)
	yamlLineMsg  = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// yamlFileError turns what the YAML decoder said about a job file into
// one line in the file's terms.
func yamlFileError(err error, ix *fileIndex) error {
	var ve *valueError
	if errors.As(err, &ve) {
		return locatedf(ve.line, ix.fieldOn(ve.line, ve.value), "%v", ve.err)
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		if m := yamlLineMsg.FindStringSubmatch(err.Error()); m != nil {
			return fmt.Errorf("line %s: not valid YAML: %s", m[1], m[2])
		}
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var msgs []string
	for _, e := range te.Errors[:min(len(te.Errors), maxFileErrors)] {
		msgs = append(msgs, yamlEntry(e, ix))
	}
	if more := len(te.Errors) - maxFileErrors; more > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", more))
	}
	return errors.New(strings.Join(msgs, "; "))
}

// yamlEntry rewrites one of the decoder's "line N: ..." messages.
func yamlEntry(e string, ix *fileIndex) string {
	if m := yamlTypeMsg.FindStringSubmatch(e); m != nil {
		line, _ := strconv.Atoi(m[1])
		m[2] = strings.TrimPrefix(m[2], "!!")
		value := m[3]
		if m[2] == "seq" || m[2] == "map" {
			value = "" // look for the list or map on the line
		}
		field := ix.fieldOn(line, value)
		if m[4] == "job.descFile" {
			field = "" // the whole file
		}
		return locatedf(line, field, "want %s, got %s", wantOf(m[4]), gotOf(m[2], m[3])).Error()
	}
	if m := yamlFieldMsg.FindStringSubmatch(e); m != nil {
		line, _ := strconv.Atoi(m[1])
		return fmt.Sprintf("line %d: unknown field %q%s", line, m[2], inSection(ix, line, m[2]))
	}
	if m := yamlDupMsg.FindStringSubmatch(e); m != nil {
		return fmt.Sprintf("line %s: field %q given twice (first at line %s)", m[1], m[2], m[3])
	}
	return strings.ReplaceAll(e, "\n", " ")
}

// inSection says in which section an unknown key sits, when not at the top.
func inSection(ix *fileIndex, line int, key string) string {
	p := ix.fieldOnKey(line, key)
	if i := strings.LastIndex(p, "."); i >= 0 && strings.HasSuffix(p, "."+key) {
		return " in " + p[:i]
	}
	return ""
}

// fieldOnKey is the path of the field named key on line; "" if none.
func (ix *fileIndex) fieldOnKey(line int, key string) string {
	if ix == nil {
		return ""
	}
	for _, f := range ix.paths {
		if (f.path == key || strings.HasSuffix(f.path, "."+key)) && ix.line[f.path] == line {
			return f.path
		}
	}
	return ""
}

// locatedf is "line N: FIELD: message", or without FIELD when unknown.
func locatedf(line int, field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return fmt.Errorf("line %d: %s", line, msg)
}

// wantOf says what a Go type of the job file holds, in the file's terms.
func wantOf(goType string) string {
	switch strings.TrimPrefix(goType, "*") {
	case "int":
		return "a whole number"
	case "string", "job.Strategy", "job.Preference":
		return "a string"
	case "[]string":
		return "a list of strings"
	case "map[string]string":
		return "a map of names to strings"
	case "job.fileRequire":
		return "a map (os, arch, cores, memory, labels)"
	case "job.descFile":
		return "a map of the job's fields (executable, nodes...)"
	}
	return strings.TrimPrefix(goType, "job.")
}

// gotOf names what the file holds: a YAML tag and its text.
func gotOf(tag, text string) string {
	switch tag {
	case "str":
		return strconv.Quote(text)
	case "seq":
		return "a list"
	case "map":
		return "a map"
	case "null":
		return "nothing"
	}
	if text != "" {
		return strconv.Quote(text)
	}
	return "a value tagged " + tag
}

// jsonFileError turns what the JSON decoder said about a job file into one
// line in the file's terms. What only the YAML decoder locates well (a
// value of the wrong type, an unknown field, a bad size) is located by
// reading the file as YAML, which JSON is.
func jsonFileError(err error, b []byte, ix *fileIndex) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("line %d: not valid JSON: %s", lineAt(b, se.Offset), strings.TrimPrefix(se.Error(), "json: "))
	}
	var ve *valueError
	if errors.As(err, &ve) { // decodeJSONFile's own
		return err
	}
	var f descFile
	if yerr := decodeYAML(b, &f); yerr != nil {
		return yamlFileError(yerr, ix)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return locatedf(lineAt(b, te.Offset), te.Field, "want %s, got a %s", wantOf(te.Type.String()), te.Value)
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// lineAt is the line of byte offset off in b, from 1.
func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return 1 + strings.Count(string(b[:off]), "\n")
}

// validPath matches the field paths Validate's messages start with:
// "nodes", "args[2]", "require: cores".
var validPath = regexp.MustCompile(`^[a-z_]+(\[\d+\])?$`)

// atLine prefixes a Validate error with the line of the field it names,
// when the file has it: "line 3: nodes: must be >= 1, got 0".
func atLine(err error, ix *fileIndex) error {
	if ix == nil {
		return err
	}
	parts := strings.Split(err.Error(), ": ")
	var path []string
	for _, p := range parts[:len(parts)-1] {
		if !validPath.MatchString(p) {
			break
		}
		if p == "mem" && len(path) == 1 && path[0] == "require" {
			p = "memory" // the command line's mem= is memory: in a file
		}
		path = append(path, p)
	}
	for i := len(path); i > 0; i-- {
		if line, ok := ix.line[strings.Join(path[:i], ".")]; ok {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	return err
}
