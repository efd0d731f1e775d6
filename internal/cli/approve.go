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

// An asking is the approval the person is answering: a tool call, or a
// question of AskUserQuestion (one at a time, answers gathered in
// answers until the last one).
type asking struct {
	a       *host.Approval
	q       int // the question being asked
	answers map[string]string
}

// showApproval prints what the CLI asks and the prompt for the answer.
func (r *renderer) showApproval(k *asking) {
	a := k.a
	req := a.Request
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
