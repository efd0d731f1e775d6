package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Structured output: with Options.JSONSchema set, the CLI gives the model
// a StructuredOutput tool whose input schema is the one given, and tells
// it to end the turn by calling it. The CLI checks the tool's input
// against the schema (a mismatch goes back to the model as a tool error)
// and puts the valid input in the result's StructuredOutput. A model that
// keeps sending invalid input ends the turn with the error subtype
// ResultErrorMaxStructuredOutputRetries (after 5 tries in 2.1.197 and
// 2.1.330); one that answers in plain text, even after the CLI's reminder,
// ends it with a successful result that has no structured output.

// ErrNoStructuredOutput reports a result without structured output: the
// turn failed, the model answered in plain text, or the session was not
// asked for any (Options.JSONSchema).
var ErrNoStructuredOutput = errors.New("claude: result has no structured output")

// JSONSchemaFor returns the JSON schema of T, for Options.JSONSchema. T
// must be a struct (or a map with string keys): the CLI hands the schema
// to the API as a tool's input schema, which must describe an object.
//
// Field names come from the json tags; fields tagged omitempty or
// omitzero are optional, the others required, and no other properties are
// allowed. A jsonschema tag becomes the property's description, which the
// model reads:
//
//	type Weather struct {
//		City  string  `json:"city" jsonschema:"the city the forecast is for"`
//		TempC float64 `json:"temp_c"`
//	}
func JSONSchemaFor[T any]() (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("claude: JSON schema for %T: %w", *new(T), err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("claude: JSON schema for %T: structured output must be an object, not %s", *new(T), schemaTypes(s))
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("claude: JSON schema for %T: %w", *new(T), err)
	}
	return b, nil
}

func schemaTypes(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	if len(s.Types) > 0 {
		return fmt.Sprint(s.Types)
	}
	return "an untyped value"
}

// DecodeOutput decodes the structured output of a turn's result into a T.
// It fails with a *StructuredOutputError, which matches
// ErrNoStructuredOutput when the result has none, and wraps the turn's
// *ResultError (a failed turn) or the JSON decoding error (output that
// doesn't fit T).
func DecodeOutput[T any](r *ResultMessage) (T, error) {
	var v T
	if r == nil {
		return v, &StructuredOutputError{Err: ErrNoStructuredOutput}
	}
	out := r.StructuredOutput
	if len(bytes.TrimSpace(out)) == 0 || bytes.Equal(bytes.TrimSpace(out), []byte("null")) {
		out = nil
	}
	e := &StructuredOutputError{Subtype: r.Subtype, Output: out}
	switch {
	case r.IsError:
		e.Err = r.Err()
		return v, e
	case out == nil:
		e.Err = ErrNoStructuredOutput
		return v, e
	}
	if err := json.Unmarshal(out, &v); err != nil {
		e.Err = err
		return v, e
	}
	return v, nil
}

// StructuredOutputError is why DecodeOutput could not return a value.
type StructuredOutputError struct {
	// Subtype is the result's subtype; ResultErrorMaxStructuredOutputRetries
	// when the model kept writing output that did not fit the schema.
	Subtype ResultSubtype
	// Output is the structured output as the CLI sent it; nil when there
	// was none.
	Output json.RawMessage
	// Err is the cause: ErrNoStructuredOutput, the turn's *ResultError, or
	// the error decoding Output.
	Err error
}

func (e *StructuredOutputError) Error() string {
	if errors.Is(e.Err, ErrNoStructuredOutput) {
		return e.Err.Error()
	}
	cause := strings.TrimPrefix(e.Err.Error(), "claude: ")
	if e.Output == nil {
		return "claude: no structured output: " + cause
	}
	return "claude: decoding structured output: " + cause
}

func (e *StructuredOutputError) Unwrap() error { return e.Err }

// Is makes every result without structured output match
// ErrNoStructuredOutput, a failed turn included.
func (e *StructuredOutputError) Is(target error) bool {
	return target == ErrNoStructuredOutput && e.Output == nil
}
