package host

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/mail"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetherhq/tether/claude"
)

// A FormField is one property of an elicitation's form (Approval.Form),
// as a UI asks for it. It crosses process boundaries in ApprovalInfo.Form,
// so a browser or a program renders the form from these fields rather
// than reading the server's schema a second way.
type FormField struct {
	// Name is the property's name: its value's key in Accept's content.
	Name string `json:"name"`
	// Title is what to call it: the schema's title, else Name.
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Type is the value's JSON type: "string", "number", "integer" or
	// "boolean" (the flat types MCP allows in a form).
	Type string `json:"type"`
	// Format is a string's: "email", "uri", "date", "date-time" or "".
	// Check holds a value to it; another format is the server's to check.
	Format   string `json:"format,omitempty"`
	Required bool   `json:"required,omitempty"`
	// Choices are the values to pick from (the schema's enum, or oneOf
	// consts with their titles); none means any value of Type.
	Choices []FormChoice `json:"choices,omitempty"`
	// Default is the schema's default value; nil: none.
	Default any `json:"default,omitempty"`
	// Minimum and Maximum bound a number's value, MinLength and MaxLength
	// a string's length in characters; nil: no bound. A UI asks within
	// them; the server has the last word.
	Minimum   *float64 `json:"minimum,omitempty"`
	Maximum   *float64 `json:"maximum,omitempty"`
	MinLength *int     `json:"min_length,omitempty"`
	MaxLength *int     `json:"max_length,omitempty"`
}

// FormChoice is a value offered by a FormField.
type FormChoice struct {
	Value any    `json:"value"`
	Label string `json:"label"`
}

// A FormError is an answer to a form refused because one of its values
// does not fit (FormField.Check, Approval.Accept): which field, and what
// would fit, in words a UI can put before the person who typed it. It
// matches ErrFormInvalid; from Accept it comes inside an *ApprovalError.
type FormError struct {
	// Field is the field's Name; "" when the answer as a whole is wrong
	// (not a JSON object).
	Field string
	// Title is the field's Title, what a UI calls it; "" for a field the
	// form does not have.
	Title string
	// Reason completes a sentence about the field (its Title, in a UI):
	// "is required", "must be from 1 to 10", "is not a field of the form".
	Reason string
}

func (e *FormError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: it %s", ErrFormInvalid, e.Reason)
	}
	return fmt.Sprintf("%v: %q %s", ErrFormInvalid, e.Field, e.Reason)
}

func (e *FormError) Unwrap() error { return ErrFormInvalid }

// Check refuses a value that does not fit f, with a *FormError whose
// Reason says what would. v is the value as encoding/json decodes it
// into an any (a string, float64 or bool), or an int or int64; nil is a
// value left out, refused only when f is Required. A UI checks each value
// as it is given, with the words Accept would refuse it with; Accept
// checks them all again.
func (f FormField) Check(v any) error {
	refuse := func(format string, args ...any) error {
		return &FormError{Field: f.Name, Title: f.Title, Reason: fmt.Sprintf(format, args...)}
	}
	if v == nil {
		if f.Required {
			return refuse("is required")
		}
		return nil
	}
	if len(f.Choices) > 0 {
		if !slices.ContainsFunc(f.Choices, func(c FormChoice) bool { return sameValue(c.Value, v) }) {
			labels := make([]string, len(f.Choices))
			for i, c := range f.Choices {
				labels[i] = c.Label
			}
			return refuse("must be one of: %s", strings.Join(labels, ", "))
		}
		return nil
	}
	switch f.Type {
	case "boolean":
		if _, ok := v.(bool); !ok {
			return refuse("must be true or false")
		}
	case "number", "integer":
		n, ok := number(v)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return refuse("must be a number")
		}
		if f.Type == "integer" && n != math.Trunc(n) {
			return refuse("must be a whole number")
		}
		if f.Minimum != nil && n < *f.Minimum || f.Maximum != nil && n > *f.Maximum {
			return refuse("must be %s", within(f.Minimum, f.Maximum))
		}
	default:
		s, ok := v.(string)
		if !ok {
			return refuse("must be text")
		}
		if n := utf8.RuneCountInString(s); f.MinLength != nil && n < *f.MinLength || f.MaxLength != nil && n > *f.MaxLength {
			return refuse("must be %s characters (that was %d)", within(f.MinLength, f.MaxLength), n)
		}
		if like := formatExample(f.Format, s); like != "" {
			return refuse("must be %s", like)
		}
	}
	return nil
}

// formatExample says what a string of the given format looks like when s
// is not one ("a date, as 2026-12-06"); "" when s is, or the format is
// not one Check knows. The formats are JSON Schema's that MCP allows in a
// form, read as a person types them: an email address alone (no name
// around it), an absolute URI, an RFC 3339 date or date-time.
func formatExample(format, s string) string {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Name != "" || a.Address != s {
			return "an email address, as ann@example.com"
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" || u.Host == "" && u.Opaque == "" && u.Path == "" {
			return "a full address, as https://example.com/"
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "a date, as 2026-12-06"
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return "a date and time, as 2026-12-06T16:30:00Z"
		}
	}
	return ""
}

// number is v as a float64, if it is a number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// sameValue says a choice's value and an answer are one: numbers by
// value (a choice read from JSON is a float64, a typed one may be an
// int), anything else as reflect.DeepEqual.
func sameValue(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}

// within says a field's bounds: "from 1 to 10", "at least 1" or "at
// most 10".
func within[T int | float64](lo, hi *T) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("from %v to %v", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf("at least %v", *lo)
	case hi != nil:
		return fmt.Sprintf("at most %v", *hi)
	}
	return ""
}

// checkForm refuses content that does not fit req's form, as Form reads
// it, with a *FormError: not a JSON object, a field the form does not
// have, or a value Check refuses (a required one left out or null among
// them). A page to visit takes no content. The server has the last word;
// this refuses what it would have to, while the person can still put it
// right.
func checkForm(req *claude.ElicitationRequest, content json.RawMessage) error {
	if req.Mode == "url" {
		return nil
	}
	var obj map[string]any
	if len(content) > 0 {
		if err := json.Unmarshal(content, &obj); err != nil || obj == nil {
			return &FormError{Reason: "must be a JSON object"}
		}
	}
	fields := formFields(req)
	for _, f := range fields {
		if err := f.Check(obj[f.Name]); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.ContainsFunc(fields, func(f FormField) bool { return f.Name == k }) {
			return &FormError{Field: k, Reason: "is not a field of the form"}
		}
	}
	return nil
}

// Form returns the fields of an elicitation's form, in the server's order
// (PropertyOrder, then the properties it leaves out, by name); nil for a
// page to visit or an approval of another kind. The schema is the
// server's: a property it describes in a way a form cannot ask (a nested
// object, a malformed enum) comes as a field of its type, or a string,
// to be answered as text.
func (a *Approval) Form() []FormField {
	if a.Kind != ApprovalElicitation || a.Elicitation == nil {
		return nil
	}
	return formFields(a.Elicitation)
}

// formFields reads e's form (Form); nil for a page to visit.
func formFields(e *claude.ElicitationRequest) []FormField {
	if e.Mode == "url" {
		return nil
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	// A member of the wrong type is skipped, the rest read (encoding/json
	// goes on past it).
	_ = json.Unmarshal(e.RequestedSchema, &schema)
	var names []string
	for _, n := range slices.Concat(e.PropertyOrder, slices.Sorted(maps.Keys(schema.Properties))) {
		if _, ok := schema.Properties[n]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	fields := make([]FormField, 0, len(names))
	for _, n := range names {
		fields = append(fields, formField(n, schema.Properties[n], slices.Contains(schema.Required, n)))
	}
	return fields
}

// formField reads one property of a form's schema.
func formField(name string, raw json.RawMessage, required bool) FormField {
	f := FormField{Name: name, Title: name, Type: "string", Required: required}
	var p struct {
		Type        any      `json:"type"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		Format      string   `json:"format"`
		Enum        []any    `json:"enum"`
		EnumNames   []string `json:"enumNames"`
		OneOf       []struct {
			Const *any   `json:"const"`
			Title string `json:"title"`
		} `json:"oneOf"`
		Default   any      `json:"default"`
		Minimum   *float64 `json:"minimum"`
		Maximum   *float64 `json:"maximum"`
		MinLength *int     `json:"minLength"`
		MaxLength *int     `json:"maxLength"`
	}
	_ = json.Unmarshal(raw, &p) // as much as is of the expected types
	if t, ok := p.Type.(string); ok && t != "" {
		f.Type = t
	}
	f.Title, f.Description, f.Format, f.Default = cmp.Or(p.Title, name), p.Description, p.Format, p.Default
	switch f.Type {
	case "number", "integer":
		f.Minimum, f.Maximum = p.Minimum, p.Maximum
	case "string":
		f.MinLength, f.MaxLength = p.MinLength, p.MaxLength
	}
	for i, v := range p.Enum {
		label := fmt.Sprint(v)
		if i < len(p.EnumNames) && p.EnumNames[i] != "" {
			label = p.EnumNames[i]
		}
		f.Choices = append(f.Choices, FormChoice{Value: v, Label: label})
	}
	if len(p.Enum) == 0 {
		for _, o := range p.OneOf {
			if o.Const == nil {
				f.Choices = nil
				break
			}
			f.Choices = append(f.Choices, FormChoice{Value: *o.Const, Label: cmp.Or(o.Title, fmt.Sprint(*o.Const))})
		}
	}
	return f
}
