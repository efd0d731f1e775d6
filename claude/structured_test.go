package claude_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
)

func TestJSONSchemaFor(t *testing.T) {
	type inner struct {
		A float64 `json:"a"`
	}
	type report struct {
		Title   string    `json:"title" jsonschema:"a short title"`
		Count   int       `json:"count"`
		Tags    []string  `json:"tags,omitempty"`
		When    time.Time `json:"when"`
		Inner   *inner    `json:"inner,omitempty"`
		private int
	}
	got, err := claude.JSONSchemaFor[report]()
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(got, &schema); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"title": map[string]any{"type": "string", "description": "a short title"},
			"count": map[string]any{"type": "integer"},
			"tags":  map[string]any{"type": []any{"null", "array"}, "items": map[string]any{"type": "string"}},
			"when":  map[string]any{"type": "string"},
			"inner": map[string]any{"type": []any{"null", "object"}, "properties": map[string]any{"a": map[string]any{"type": "number"}},
				"required": []any{"a"}, "additionalProperties": false},
		},
		"required":             []any{"title", "count", "when"},
		"additionalProperties": false,
	}
	if diff := cmp.Diff(want, schema); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
}

func TestJSONSchemaForMap(t *testing.T) {
	got, err := claude.JSONSchemaFor[map[string]int]()
	if err != nil || string(got) != `{"type":"object","additionalProperties":{"type":"integer"}}` {
		t.Errorf("JSONSchemaFor[map[string]int] = %s, %v", got, err)
	}
}

func TestJSONSchemaForRejectsNonObjects(t *testing.T) {
	for name, f := range map[string]func() (json.RawMessage, error){
		"slice":   claude.JSONSchemaFor[[]int],
		"string":  claude.JSONSchemaFor[string],
		"pointer": claude.JSONSchemaFor[*Weather],
		"channel": claude.JSONSchemaFor[chan int],
	} {
		if s, err := f(); err == nil {
			t.Errorf("%s: JSONSchemaFor = %s, want an error", name, s)
		} else if !strings.HasPrefix(err.Error(), "claude: JSON schema for ") {
			t.Errorf("%s: error %q", name, err)
		}
	}
}

func TestDecodeOutput(t *testing.T) {
	w, err := claude.DecodeOutput[Weather](&claude.ResultMessage{
		Subtype: claude.ResultSuccess, Result: `{"city":"Oslo","temp_c":-3.5}`,
		StructuredOutput: json.RawMessage(`{"city":"Oslo","temp_c":-3.5,"wind":"strong"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Weather{City: "Oslo", TempC: -3.5}, w); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	// Any type the output fits decodes, a map included.
	m, err := claude.DecodeOutput[map[string]any](&claude.ResultMessage{StructuredOutput: json.RawMessage(`{"n":1}`)})
	if err != nil || m["n"] != float64(1) {
		t.Errorf("map: %v, %v", m, err)
	}
}

func TestDecodeOutputErrors(t *testing.T) {
	maxRetries := &claude.ResultMessage{
		Subtype: claude.ResultErrorMaxStructuredOutputRetries, IsError: true, StopReason: "tool_use",
	}
	for _, tc := range []struct {
		name      string
		r         *claude.ResultMessage
		noOutput  bool // matches ErrNoStructuredOutput
		turnError bool // wraps a *ResultError
		jsonError bool // wraps the decoding error
	}{
		{name: "nil result", r: nil, noOutput: true},
		{name: "plain text answer", r: &claude.ResultMessage{Subtype: claude.ResultSuccess, Result: "It's cold."}, noOutput: true},
		{name: "null output", r: &claude.ResultMessage{Subtype: claude.ResultSuccess, StructuredOutput: json.RawMessage(" null ")}, noOutput: true},
		{name: "max retries", r: maxRetries, noOutput: true, turnError: true},
		{name: "API error", r: &claude.ResultMessage{Subtype: claude.ResultSuccess, IsError: true, Result: "overloaded", APIErrorStatus: 529}, noOutput: true, turnError: true},
		{name: "wrong shape", r: &claude.ResultMessage{Subtype: claude.ResultSuccess, StructuredOutput: json.RawMessage(`{"city":3}`)}, jsonError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := claude.DecodeOutput[Weather](tc.r)
			if err == nil {
				t.Fatalf("DecodeOutput = %+v, want an error", w)
			}
			var se *claude.StructuredOutputError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *StructuredOutputError", err, err)
			}
			if got := errors.Is(err, claude.ErrNoStructuredOutput); got != tc.noOutput {
				t.Errorf("errors.Is(err, ErrNoStructuredOutput) = %v: %v", got, err)
			}
			var re *claude.ResultError
			if got := errors.As(err, &re); got != tc.turnError {
				t.Errorf("errors.As(err, *ResultError) = %v: %v", got, err)
			}
			var je *json.UnmarshalTypeError
			if got := errors.As(err, &je); got != tc.jsonError {
				t.Errorf("errors.As(err, *json.UnmarshalTypeError) = %v: %v", got, err)
			}
			if !strings.HasPrefix(err.Error(), "claude: ") {
				t.Errorf("error text %q", err)
			}
		})
	}
	_, err := claude.DecodeOutput[Weather](maxRetries)
	var se *claude.StructuredOutputError
	if errors.As(err, &se) && se.Subtype != claude.ResultErrorMaxStructuredOutputRetries {
		t.Errorf("Subtype = %q", se.Subtype)
	}
	if want := "claude: no structured output: turn failed (error_max_structured_output_retries)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
