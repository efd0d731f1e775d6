package cli

import (
	"encoding/json"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// jsonView writes Tether's events as newline-delimited JSON (--json), one
// object per line with a "type":
//
//	{"type":"message","message":{…the CLI's line…}}
//	{"type":"state","state":"running_tool","tool":"Bash","seq":4}
//	{"type":"approval","id":"…","kind":"tool","tool":"Bash","input":{…},"suggestions":[…]}
//	{"type":"approval","id":"…","kind":"question","questions":[…]}
//	{"type":"approval","id":"…","kind":"elicitation","server":"deploy","text":"…","mode":"form","form":[…]}
//	{"type":"note","text":"allowed Bash"}
//	{"type":"error","error":"…"}
//	{"type":"cost","usd":0.0123,"turns":1,"tokens":{…}}
//
// Approvals are answered on stdin with the same words as in a terminal
// (y, a, n <reason>, or an option number; a form's fields a line each),
// or by --yes. README.md's tether run section is the reference.
type jsonView struct {
	enc *json.Encoder
}

type jsonEvent struct {
	Type        string                    `json:"type"`
	Message     json.RawMessage           `json:"message,omitempty"`
	State       string                    `json:"state,omitempty"`
	Tool        string                    `json:"tool,omitempty"`
	Attempt     int                       `json:"attempt,omitempty"`
	Seq         uint64                    `json:"seq,omitempty"`
	ID          string                    `json:"id,omitempty"`
	Kind        string                    `json:"kind,omitempty"`
	Input       json.RawMessage           `json:"input,omitempty"`
	Suggestions []claude.PermissionUpdate `json:"suggestions,omitempty"`
	Questions   []host.Question           `json:"questions,omitempty"`
	Text        string                    `json:"text,omitempty"`
	Error       string                    `json:"error,omitempty"`
	USD         *float64                  `json:"usd,omitempty"`
	Turns       *int                      `json:"turns,omitempty"`
	Tokens      *host.Tokens              `json:"tokens,omitempty"`
	Changes     []host.FileChange         `json:"changes,omitempty"` // /diff
	// An elicitation's (kind "elicitation"; Text is its message).
	Server        string           `json:"server,omitempty"`
	Mode          string           `json:"mode,omitempty"`
	URL           string           `json:"url,omitempty"`
	Schema        json.RawMessage  `json:"requested_schema,omitempty"`
	PropertyOrder []string         `json:"property_order,omitempty"`
	Form          []host.FormField `json:"form,omitempty"`
}

func (j *jsonView) emit(e jsonEvent) { _ = j.enc.Encode(e) }

func (j *jsonView) message(m claude.Message) {
	raw := m.RawJSON()
	if raw == nil {
		var err error
		if raw, err = json.Marshal(m); err != nil {
			return
		}
	}
	j.emit(jsonEvent{Type: "message", Message: raw})
}

func (j *jsonView) setState(l host.Liveness) {
	e := jsonEvent{Type: "state", State: l.State.String(), Tool: l.Tool, Attempt: l.Attempt, Seq: l.Seq}
	if l.Err != nil {
		e.Error = l.Err.Error()
	}
	j.emit(e)
}

func (j *jsonView) showApproval(k *asking) {
	a := k.a
	if k.q > 0 {
		return // asked once, with every question
	}
	e := jsonEvent{Type: "approval", ID: a.ID(), Kind: "tool", Tool: a.Request.ToolName, Input: a.Request.Input, Suggestions: a.Request.Suggestions}
	switch a.Kind {
	case host.ApprovalQuestion:
		e.Kind, e.Questions = "question", a.Questions
	case host.ApprovalElicitation:
		// Its fields are answered a line each, in Form's order.
		info := a.Info()
		e.Kind, e.Schema, e.Text = "elicitation", info.RequestedSchema, info.Message
		e.Server, e.Mode, e.URL, e.PropertyOrder, e.Form = info.Server, info.Mode, info.URL, info.PropertyOrder, info.Form
	}
	j.emit(e)
}

func (j *jsonView) note(text string)  { j.emit(jsonEvent{Type: "note", Text: text}) }
func (j *jsonView) failure(err error) { j.emit(jsonEvent{Type: "error", Error: err.Error()}) }
func (j *jsonView) prompt()           {}
func (j *jsonView) suggest(string)    {} // the prompt_suggestion message went out as it came
func (j *jsonView) drawStatus()       {}

func (j *jsonView) end(c host.Cost) {
	j.emit(jsonEvent{Type: "cost", USD: &c.USD, Turns: &c.Turns, Tokens: &c.Tokens})
}
