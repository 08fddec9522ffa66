package rules

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	xmessage "golang.org/x/text/message"

	"github.com/ahp-tap/ahp-tap/tap"
)

// mcpElicitationSchema is ahp-tap's own JSON Schema for the pinned MCP
// 2025-11-25 elicitation payloads (elicitation/create params, ElicitResult)
// that AHP carries serialized inside elicitation text parts (§8).
//
//go:embed schemas/mcp-elicitation.json
var mcpElicitationSchema []byte

const mcpSchemaURL = "urn:ahp-tap:mcp-2025-11-25-elicitation"

// mcpSchemas are the compiled parts of mcpElicitationSchema a payload is
// validated against. They are compiled once and never change.
type mcpSchemas struct {
	form, url, result, answers *jsonschema.Schema
}

var compiledMCP = sync.OnceValue(func() *mcpSchemas {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mcpElicitationSchema))
	if err != nil {
		panic("rules: embedded MCP schema: " + err.Error())
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(mcpSchemaURL, doc); err != nil {
		panic("rules: embedded MCP schema: " + err.Error())
	}
	get := func(def string) *jsonschema.Schema { return c.MustCompile(mcpSchemaURL + "#/$defs/" + def) }
	return &mcpSchemas{form: get("formParams"), url: get("urlParams"), result: get("result"), answers: get("answers")}
})

// englishPrinter renders schema error messages.
var englishPrinter = xmessage.NewPrinter(language.English)

// mcpFault is one place where an MCP payload breaks the pinned contract.
type mcpFault struct {
	at  string // JSON Pointer inside the payload ("" for the payload itself)
	msg string
}

func (f mcpFault) String() string {
	if f.at == "" {
		return f.msg
	}
	return f.at + ": " + f.msg
}

// mcpRequestFaults validates parsed elicitation/create params. The MCP
// mode member selects the variant; an omitted mode means form.
func mcpRequestFaults(params *tap.Value) []mcpFault {
	s := compiledMCP()
	sch := s.form
	if m, _ := params.Get("mode").Text(); m == "url" {
		sch = s.url
	}
	return schemaFaults(sch, params, fieldShapes)
}

// mcpResultFaults validates a parsed ElicitResult.
func mcpResultFaults(result *tap.Value) []mcpFault {
	return schemaFaults(compiledMCP().result, result, answerShapes)
}

// mcpAnswerFaults validates the content object of an ElicitResult: each
// answer a string, number, boolean or list of strings.
func mcpAnswerFaults(content *tap.Value) []mcpFault {
	return schemaFaults(compiledMCP().answers, content, answerShapes)
}

// What a failed anyOf means in each schema: the only anyOf keywords are
// the form field variants and the answer value types.
const (
	fieldShapes  = "is not one of the flat field shapes MCP allows (string, number, integer, boolean, or a single or multiple choice of strings)"
	answerShapes = "is not an MCP answer value (a string, number, boolean or list of strings)"
)

// schemaFaults runs sch on v and flattens the error tree into faults, one
// per failing place. An anyOf that fails is reported once, as anyOfMsg,
// not once per branch.
func schemaFaults(sch *jsonschema.Schema, v *tap.Value, anyOfMsg string) []mcpFault {
	err := sch.Validate(v.Any())
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []mcpFault{{msg: err.Error()}}
	}
	var out []mcpFault
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			out = append(out, mcpFault{at: pointerOf(e.InstanceLocation), msg: anyOfMsg})
			return
		}
		if len(e.Causes) == 0 {
			out = append(out, mcpFault{at: pointerOf(e.InstanceLocation), msg: e.ErrorKind.LocalizedString(englishPrinter)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortStableFunc(out, func(a, b mcpFault) int { return strings.Compare(a.at, b.at) })
	return slices.CompactFunc(out, func(a, b mcpFault) bool { return a == b })
}

func pointerOf(toks []string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString("/" + tap.EscapePointer(t))
	}
	return b.String()
}

// parseMCP parses the text of a body-selected elicitation part as one
// complete JSON object. Duplicate keys make the payload ambiguous (two
// readers could disagree on its mode or action), so they are a fault.
func parseMCP(text string) (*tap.Value, []mcpFault) {
	var d tap.Decoder // bounded: a text part must not hold more values than a frame may
	v, err := d.Parse([]byte(text))
	dups := d.Dups
	if errors.Is(err, tap.ErrTooManyValues) {
		return nil, nil // past the audit work bound: not checked (issue 8 item 6)
	}
	if err != nil {
		return nil, []mcpFault{{msg: fmt.Sprintf("is not complete JSON (%v)", err)}}
	}
	var out []mcpFault
	for _, d := range dups {
		out = append(out, mcpFault{at: d.Pointer, msg: fmt.Sprintf("object key %q appears more than once", d.Key)})
	}
	if v.Kind != tap.Object {
		out = append(out, mcpFault{msg: fmt.Sprintf("is %s, not a JSON object", v.Describe())})
	}
	return v, out
}

// formAnswerFaults checks the answers of an accepted form result against
// the form the request asked for (MCP 2025-11-25: content holds values
// matching the requested schema): every required field answered, and each
// answer of its field's type, within its choices. Answers to fields the
// form does not list are left alone, as JSON Schema leaves them.
func formAnswerFaults(form, content *tap.Value) []string {
	if form == nil {
		return nil
	}
	var out []string
	for _, r := range form.Get("required").Elems() {
		if name, ok := r.Text(); ok && !content.Has(name) {
			out = append(out, fmt.Sprintf("required field %q is not answered", name))
		}
	}
	props := form.Get("properties")
	for _, m := range content.Obj {
		field := props.Get(m.Key)
		if field == nil {
			continue
		}
		if why := answerFault(field, m.Val); why != "" {
			out = append(out, fmt.Sprintf("answer %q %s", m.Key, why))
		}
	}
	return out
}

// answerFault says why v does not answer a form field ("" when it does).
func answerFault(field, v *tap.Value) string {
	typ, _ := field.Get("type").Text()
	switch typ {
	case "string":
		s, ok := v.Text()
		if !ok {
			return "must be a string, found " + v.Describe()
		}
		if choices := fieldChoices(field); choices != nil && !slices.Contains(choices, s) {
			return fmt.Sprintf("must be one of %q, found %q", choices, s)
		}
	case "number":
		if !v.Is(tap.Number) {
			return "must be a number, found " + v.Describe()
		}
	case "integer":
		if !v.IsInteger() {
			return "must be an integer, found " + show(v)
		}
	case "boolean":
		if !v.Is(tap.Bool) {
			return "must be a boolean, found " + v.Describe()
		}
	case "array":
		if !v.Is(tap.Array) {
			return "must be a list of choices, found " + v.Describe()
		}
		choices := fieldChoices(field.Get("items"))
		for _, e := range v.Arr {
			s, ok := e.Text()
			if !ok {
				return "must list strings, found " + e.Describe()
			}
			if choices != nil && !slices.Contains(choices, s) {
				return fmt.Sprintf("lists %q, which is not one of %q", s, choices)
			}
		}
	}
	return ""
}

// fieldChoices lists the allowed values of a choice field (enum, oneOf or
// anyOf of {const, title}); nil when the field is free.
func fieldChoices(field *tap.Value) []string {
	var out []string
	for _, e := range field.Get("enum").Elems() {
		if s, ok := e.Text(); ok {
			out = append(out, s)
		}
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		for _, o := range field.Get(key).Elems() {
			if s, ok := o.Get("const").Text(); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
