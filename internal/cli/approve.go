package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// An asking is the approval the person is answering: a tool call, a
// question of AskUserQuestion (one at a time, answers gathered in
// answers until the last one), or an MCP server's form (a field at a
// time, values gathered in content).
type asking struct {
	a       *host.Approval
	q       int // the question, or the form's field, being asked
	answers map[string]string
	form    []host.FormField
	content map[string]any
}

// newAsking starts asking a.
func newAsking(a *host.Approval) *asking {
	return &asking{a: a, answers: map[string]string{}, form: a.Form(), content: map[string]any{}}
}

// showApproval prints what the CLI asks and the prompt for the answer.
func (r *renderer) showApproval(k *asking) {
	a := k.a
	req := a.Request
	if a.Kind == host.ApprovalElicitation {
		r.showForm(k)
		return
	}
	if a.Kind == host.ApprovalQuestion {
		q := a.Questions[k.q]
		head := "? "
		if q.Header != "" {
			head += q.Header + ": "
		}
		r.println("", styleYellow+styleBold, head+q.Question)
		for i, o := range q.Options {
			line := fmt.Sprintf("   %d. %s", i+1, o.Label)
			if o.Description != "" {
				line += r.style(styleDim, " — "+o.Description)
			}
			r.println("", "", line)
		}
		how := "a number"
		if q.MultiSelect {
			how = "numbers separated by commas (several allowed)"
		}
		r.println("", styleDim, "  answer with "+how+", or type an answer of your own")
		r.prompt()
		return
	}
	title := "? " + req.ToolName + " wants to run"
	if req.DisplayName != "" && req.DisplayName != req.ToolName {
		title += " (" + req.DisplayName + ")"
	}
	r.println("", styleYellow+styleBold, title)
	if req.Description != "" {
		r.println("  ", styleDim, req.Description)
	}
	if d, ok := toolDiff(req, r.readFile); ok {
		for _, l := range d.lines(r.color) {
			r.println("    ", "", l)
		}
	} else {
		r.inputLines(req)
	}
	if req.DecisionReason != "" {
		r.println("  ", styleDim, "why: "+req.DecisionReason)
	}
	for _, s := range req.Suggestions {
		r.println("  ", styleDim, "suggested for \"always\": "+suggestionString(s))
	}
	r.println("", "", "  [y] allow   [a] allow always   [n] deny   (n <reason> tells the model why)")
	r.prompt()
}

func (r *renderer) prompt() { r.write(r.style(styleBold, "> ")) }

// suggest shows the CLI's guess at the next prompt on a line of its own,
// above the prompt that follows.
func (r *renderer) suggest(text string) {
	r.println("", styleDim, "↳ suggested: "+text+"   (Enter on an empty line sends it)")
}

// inputLines shows the input of a tool call that is not a file edit
// (those show as diffs: toolDiff): the command for Bash, else the JSON,
// indented.
func (r *renderer) inputLines(req *claude.ToolPermissionRequest) {
	for _, l := range inputText(req) {
		r.println("    ", "", l)
	}
}

// inputText is a tool call's input as lines: the command for Bash, else
// the JSON.
func inputText(req *claude.ToolPermissionRequest) []string {
	prefixed := func(prefix, s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			out = append(out, prefix+l)
		}
		return out
	}
	if req.ToolName == "Bash" {
		if in, err := claude.DecodeInput[claude.BashInput](req.Input); err == nil && in.Command != "" {
			return prefixed("$ ", in.Command)
		}
	}
	var v any
	if json.Unmarshal(req.Input, &v) == nil {
		if b, err := json.MarshalIndent(v, "", "  "); err == nil {
			lines := strings.Split(string(b), "\n")
			if len(lines) > 30 {
				lines = append(lines[:30], fmt.Sprintf("… %d more lines", len(lines)-30))
			}
			return lines
		}
	}
	return []string{truncate(string(req.Input), maxInputChars)}
}

func suggestionString(s claude.PermissionUpdate) string {
	var parts []string
	for _, r := range s.Rules {
		rule := r.ToolName
		if r.RuleContent != "" {
			rule += "(" + r.RuleContent + ")"
		}
		parts = append(parts, rule)
	}
	out := string(s.Type)
	if s.Behavior != "" {
		out += " " + string(s.Behavior)
	}
	if len(parts) > 0 {
		out += " " + strings.Join(parts, ", ")
	}
	if s.Mode != "" {
		out += " mode " + string(s.Mode)
	}
	if len(s.Directories) > 0 {
		out += " " + strings.Join(s.Directories, ", ")
	}
	if s.Destination != "" {
		out += " (" + string(s.Destination) + ")"
	}
	return out
}

// answer takes a line typed in answer to k. It returns done when the
// approval is answered (or gone), and what to tell the person.
func (k *asking) answer(line string) (done bool, said string, err error) {
	line = strings.TrimSpace(line)
	a := k.a
	if a.Kind == host.ApprovalElicitation {
		return k.fill(line)
	}
	if a.Kind == host.ApprovalQuestion {
		q := a.Questions[k.q]
		if line == "" {
			return false, "type an answer", nil
		}
		k.answers[q.Question] = pickOptions(q, line)
		k.q++
		if k.q < len(a.Questions) {
			return false, "", nil
		}
		var parts []string
		for _, q := range a.Questions {
			parts = append(parts, fmt.Sprintf("%s → %s", q.Question, k.answers[q.Question]))
		}
		return true, "answered: " + strings.Join(parts, "; "), a.Answer(k.answers)
	}
	word, rest, _ := strings.Cut(line, " ")
	switch strings.ToLower(word) {
	case "y", "yes", "allow":
		return true, "allowed " + a.Request.ToolName, a.Allow()
	case "a", "always":
		return true, "allowed " + a.Request.ToolName + " (always)", a.AllowAlways()
	case "n", "no", "d", "deny":
		reason := strings.TrimSpace(rest)
		if reason == "" {
			reason = "The user denied this tool call."
		}
		return true, "denied " + a.Request.ToolName + ": " + reason, a.Deny(reason)
	}
	return false, "answer y, a or n", nil
}

// pickOptions turns "2" or "1, 3" into the options' labels; anything else
// is a free-text answer.
func pickOptions(q host.Question, line string) string {
	var labels []string
	for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > len(q.Options) {
			return line
		}
		labels = append(labels, q.Options[n-1].Label)
	}
	if len(labels) == 0 || (!q.MultiSelect && len(labels) > 1) {
		return line
	}
	return strings.Join(labels, ", ")
}

// firstOptions answers every question with its first option: --yes.
func firstOptions(qs []host.Question) map[string]string {
	m := map[string]string{}
	for _, q := range qs {
		if len(q.Options) > 0 {
			m[q.Question] = q.Options[0].Label
		} else {
			m[q.Question] = "yes"
		}
	}
	return m
}

// withdrawn reports an answer refused because the CLI stopped waiting.
func withdrawn(err error) bool {
	return errors.Is(err, host.ErrWithdrawn) || errors.Is(err, host.ErrAlreadyAnswered) || errors.Is(err, host.ErrNoApproval)
}

// showForm asks an MCP server's request for input: first what it asks,
// then the form's fields one at a time (or the page to visit).
func (r *renderer) showForm(k *asking) {
	a, e := k.a, k.a.Elicitation
	if k.q == 0 {
		r.println("", styleYellow+styleBold, "? "+a.Request.Title+": "+e.Message)
		switch {
		case e.Mode == "url":
			r.println("  ", "", "open "+e.URL)
			r.println("", styleDim, "  press Enter once done there, or type /decline")
		case len(k.form) == 0:
			r.println("", styleDim, "  press Enter to send, or type /decline")
		default:
			r.println("", styleDim, "  answer each field: an empty line takes its [Enter: …] value, or skips one not marked *; /decline declines")
		}
	}
	if k.q < len(k.form) {
		f := k.form[k.q]
		head := "  " + f.Title
		if f.Required {
			head += " *"
		}
		if f.Description != "" {
			head += r.style(styleDim, " — "+f.Description)
		}
		if f.Type == "boolean" && len(f.Choices) == 0 {
			head += " (y/n)"
		}
		if d, ok := defaultText(f); ok {
			head += r.style(styleDim, " [Enter: "+d+"]")
		}
		r.println("", "", head)
		for i, c := range f.Choices {
			r.println("", "", fmt.Sprintf("   %d. %s", i+1, c.Label))
		}
	}
	r.prompt()
}

// defaultText is how the terminal says f's default, the value an empty
// line takes: a choice's label, yes or no, else the value; false when f
// has none, or one it would not take.
func defaultText(f host.FormField) (string, bool) {
	d := f.Default
	if d == nil || f.Check(d) != nil {
		return "", false
	}
	for _, c := range f.Choices {
		if fmt.Sprint(c.Value) == fmt.Sprint(d) {
			return c.Label, true
		}
	}
	if b, ok := d.(bool); ok {
		return map[bool]string{true: "yes", false: "no"}[b], true
	}
	return fmt.Sprint(d), true
}

// fill takes a line typed for an MCP server's form: the value of the
// field being asked, /decline, or (a page to visit, a form without
// fields) the Enter that sends it.
func (k *asking) fill(line string) (done bool, said string, err error) {
	a := k.a
	who := a.Request.DisplayName
	if line == "/decline" {
		return true, "declined " + who + "'s request", a.Deny("The user declined.")
	}
	if k.q < len(k.form) {
		f := k.form[k.q]
		if line == "" {
			// Enter takes the field's default, as the browser shows it
			// filled in; else it skips a field not required.
			if _, ok := defaultText(f); ok {
				k.content[f.Name] = f.Default
			} else if f.Required {
				return false, f.Title + " is required", nil
			}
		} else {
			v, err := formValue(f, line)
			if err != nil {
				return false, err.Error(), nil
			}
			k.content[f.Name] = v
		}
		k.q++
		if k.q < len(k.form) {
			return false, "", nil
		}
	}
	if a.Elicitation.Mode == "url" {
		return true, "told " + who + " the page is done", a.Accept(nil)
	}
	b, err := json.Marshal(k.content)
	if err != nil {
		return true, "", err
	}
	var parts []string
	for _, f := range k.form {
		if v, ok := k.content[f.Name]; ok {
			parts = append(parts, fmt.Sprintf("%s=%v", f.Name, v))
		}
	}
	return true, "sent " + who + ": " + strings.Join(parts, ", "), a.Accept(b)
}

// formValue is the value typed for f: a choice by its number or label, a
// number, yes or no, else the text. What cannot be read as f's type is
// asked again with what to type; a value f does not take (out of its
// bounds, not of its format) with the host's reason (host.FormField.Check).
func formValue(f host.FormField, text string) (any, error) {
	v, err := typedValue(f, text)
	if err != nil {
		return nil, err
	}
	var fe *host.FormError
	if err := f.Check(v); errors.As(err, &fe) {
		return nil, errors.New(f.Title + " " + fe.Reason)
	}
	return v, nil
}

// typedValue reads text as a value of f's type (formValue).
func typedValue(f host.FormField, text string) (any, error) {
	if len(f.Choices) > 0 {
		if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(f.Choices) {
			return f.Choices[n-1].Value, nil
		}
		for _, c := range f.Choices {
			if strings.EqualFold(c.Label, text) || strings.EqualFold(fmt.Sprint(c.Value), text) {
				return c.Value, nil
			}
		}
		return nil, fmt.Errorf("pick 1 to %d", len(f.Choices))
	}
	switch f.Type {
	case "boolean":
		switch strings.ToLower(text) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("answer y or n")
	case "number":
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, errors.New("type a number")
		}
		return n, nil
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, errors.New("type a whole number")
		}
		return n, nil
	}
	return text, nil
}
