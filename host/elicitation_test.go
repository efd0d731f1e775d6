package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// deployForm is an MCP server's request for input, as the CLI forwards
// it: a form whose env the server requires.
var deployForm = map[string]any{
	"mcp_server_name": "deploy", "message": "Which environment?", "mode": "form",
	"requested_schema": map[string]any{"type": "object", "required": []string{"env"}, "properties": map[string]any{
		"env": map[string]any{"type": "string", "enum": []string{"staging", "production"}}, "note": map[string]any{"type": "string"}}},
	"property_order": []string{"env", "note"},
}

// elicitTurn plays a turn whose MCP tool asks for input once per body,
// and sends the host's answers to answers.
func elicitTurn(answers chan<- string, bodies ...any) claudetest.Script {
	return func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "mcp__deploy__pick", map[string]any{}))
		for _, b := range bodies {
			raw, err := c.Request(ctx, "elicitation", b)
			if err != nil {
				return err
			}
			answers <- string(raw)
		}
		c.Write(c.ToolResult("toolu_1", "ok", false), c.AssistantText("done"), c.ResultSuccess("done"))
		_, err := c.ReadUser(ctx)
		return err
	}
}

// Without Options.Elicitations a server's request for input is declined
// at once, as claude does, and nobody is asked.
func TestElicitationDeclinedByDefault(t *testing.T) {
	ctx := testCtx(t)
	answers := make(chan string, 1)
	s, l := start(t, nil, elicitTurn(answers, deployForm))
	s.Send(ctx, "deploy")
	if got := <-answers; got != `{"action":"decline"}` {
		t.Errorf("CLI got %s", got)
	}
	l.waitState(t, ctx, host.StateIdle)
	for _, st := range l.strings() {
		if st == "awaiting_answer mcp__deploy" {
			t.Error("the session waited for an answer nobody was asked")
		}
	}
}

// With Options.Elicitations the request is an approval: the session
// awaits an answer, the approval lists the form, answers of another kind
// or that leave a required value out are refused while it stays pending,
// and Accept sends the values; Deny declines the next request, a deny
// that interrupts cancels the third. Each answer is journaled.
func TestElicitationApproval(t *testing.T) {
	ctx := testCtx(t)
	answers := make(chan string, 3)
	s, l := start(t, &host.Options{Elicitations: true}, elicitTurn(answers, deployForm, deployForm, deployForm))
	s.Send(ctx, "deploy")
	lv := l.waitState(t, ctx, host.StateAwaitingAnswer)
	a := lv.Approval
	if a.Kind != host.ApprovalElicitation || lv.Tool != "mcp__deploy" || a.Elicitation.Message != "Which environment?" {
		t.Fatalf("approval = %+v (tool %q)", a, lv.Tool)
	}
	info := a.Info()
	if info.Kind != "elicitation" || info.Server != "deploy" || info.Message != "Which environment?" || info.Mode != "form" ||
		info.Title != "deploy asks for input" || len(info.PropertyOrder) != 2 || !json.Valid(info.RequestedSchema) || info.ToolUseID != "toolu_1" {
		t.Errorf("info = %+v", info)
	}
	wantForm := []host.FormField{
		{Name: "env", Title: "env", Type: "string", Required: true, Choices: []host.FormChoice{{Value: "staging", Label: "staging"}, {Value: "production", Label: "production"}}},
		{Name: "note", Title: "note", Type: "string"},
	}
	if diff := cmp.Diff(wantForm, a.Form()); diff != "" {
		t.Errorf("Form (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantForm, info.Form); diff != "" {
		t.Errorf("Info().Form (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"answer", a.Answer(map[string]string{"env": "staging"}), host.ErrNotAQuestion},
		{"allow", a.Allow(), host.ErrFormInvalid},
		{"not an object", a.Accept(json.RawMessage(`["staging"]`)), host.ErrFormInvalid},
		{"without env", a.Accept(json.RawMessage(`{"note":"x"}`)), host.ErrFormInvalid},
		{"env null", a.Accept(json.RawMessage(`{"env":null}`)), host.ErrFormInvalid},
		{"env not a choice", a.Accept(json.RawMessage(`{"env":"qa"}`)), host.ErrFormInvalid},
		{"note a number", a.Accept(json.RawMessage(`{"env":"staging","note":5}`)), host.ErrFormInvalid},
		{"a field the form lacks", a.Accept(json.RawMessage(`{"env":"staging","notes":"x"}`)), host.ErrFormInvalid},
	} {
		var ae *host.ApprovalError
		if !errors.Is(c.err, c.want) || !errors.As(c.err, &ae) || ae.ID != a.ID() {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	// Over the protocol, the refusal's message is for the person who
	// filled the form: the field's title and what would fit.
	for content, msg := range map[string]string{`{}`: "env is required", `{"env":"qa"}`: "env must be one of: staging, production", `"x"`: "The answer must be a JSON object"} {
		_, err := s.Do(ctx, &host.Command{Type: host.CommandAnswer, Approval: a.ID(), Behavior: "allow", Content: json.RawMessage(content)})
		var fe *host.FormError
		if host.ErrorCode(err) != host.CodeFormInvalid || err.Error() != msg || !errors.As(err, &fe) {
			t.Errorf("Do(%s): %v (code %q), want %q", content, err, host.ErrorCode(err), msg)
		}
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandAnswer, Approval: a.ID(), Behavior: "deny", Content: json.RawMessage(`{}`)}); host.ErrorCode(err) != host.CodeBadRequest {
		t.Errorf("Do deny with content: %v", err)
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandAnswer, Approval: a.ID(), Behavior: "allow", Content: json.RawMessage(`{"env":"staging"}`), Actor: "Ann"}); err != nil {
		t.Fatal(err)
	}
	if got := <-answers; got != `{"action":"accept","content":{"env":"staging"}}` {
		t.Errorf("CLI got %s", got)
	}
	if err := a.Accept(json.RawMessage(`{"env":"production"}`)); !errors.Is(err, host.ErrAlreadyAnswered) {
		t.Errorf("a second answer: %v", err)
	}

	b := l.waitFor(t, ctx, "a second request", func(v host.Liveness) bool { return v.Approval != nil && v.Approval != a }).Approval
	if err := b.Deny("not now"); err != nil {
		t.Fatal(err)
	}
	if got := <-answers; got != `{"action":"decline"}` {
		t.Errorf("CLI got %s", got)
	}
	c := l.waitFor(t, ctx, "a third request", func(v host.Liveness) bool { return v.Approval != nil && v.Approval != a && v.Approval != b }).Approval
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandAnswer, Approval: c.ID(), Behavior: "deny", Interrupt: true}); err != nil {
		t.Fatal(err)
	}
	if got := <-answers; got != `{"action":"cancel"}` {
		t.Errorf("CLI got %s", got)
	}
	l.waitState(t, ctx, host.StateIdle)

	var outcomes []string
	for _, r := range s.Snapshot().Resolved {
		outcomes = append(outcomes, r.Kind+" "+r.Outcome+" by "+r.AnsweredBy+" ("+r.ToolUseID+" "+r.Server+": "+r.ServerMessage+")")
	}
	const on = " (toolu_1 deploy: Which environment?)"
	if want := []string{"elicitation answered by Ann" + on, "elicitation denied by " + on, "elicitation denied by " + on}; !slices.Equal(outcomes, want) {
		t.Errorf("journaled outcomes %q, want %q", outcomes, want)
	}
}

// Form reads the flat schemas MCP allows: the server's order first (names
// it lists that are no property, and repeats, are dropped), then the rest
// by name; choices from enum (with enumNames) or oneOf consts; types,
// formats, defaults, and the bounds of the field's type (a number's
// minimum and maximum, a string's length). A page to visit has no form,
// and takes no content.
func TestElicitationForm(t *testing.T) {
	ctx := testCtx(t)
	form := map[string]any{
		"mcp_server_name": "shop", "message": "Your order", "title": "Order form",
		"requested_schema": map[string]any{"type": "object", "required": []string{"qty"}, "properties": map[string]any{
			"qty":   map[string]any{"type": "integer", "default": 1, "minimum": 1, "maximum": 9, "maxLength": 3},
			"gift":  map[string]any{"type": "boolean", "title": "A gift?"},
			"email": map[string]any{"type": "string", "format": "email", "minLength": 3, "maximum": 5},
			"size":  map[string]any{"type": "string", "enum": []string{"s", "m"}, "enumNames": []string{"Small", "Medium"}},
			"speed": map[string]any{"type": "number", "oneOf": []any{map[string]any{"const": 1, "title": "Slow"}, map[string]any{"const": 2}}},
		}},
		"property_order": []string{"size", "gone", "qty", "size"},
	}
	page := map[string]any{"mcp_server_name": "shop", "message": "Pay", "mode": "url", "url": "https://pay.invalid/x", "elicitation_id": "e1"}
	answers := make(chan string, 2)
	s, l := start(t, &host.Options{Elicitations: true}, elicitTurn(answers, form, page))
	s.Send(ctx, "order")
	a := l.waitState(t, ctx, host.StateAwaitingAnswer).Approval
	want := []host.FormField{
		{Name: "size", Title: "size", Type: "string", Choices: []host.FormChoice{{Value: "s", Label: "Small"}, {Value: "m", Label: "Medium"}}},
		{Name: "qty", Title: "qty", Type: "integer", Required: true, Default: 1.0, Minimum: new(1.0), Maximum: new(9.0)},
		{Name: "email", Title: "email", Type: "string", Format: "email", MinLength: new(3)},
		{Name: "gift", Title: "A gift?", Type: "boolean"},
		{Name: "speed", Title: "speed", Type: "number", Choices: []host.FormChoice{{Value: 1.0, Label: "Slow"}, {Value: 2.0, Label: "2"}}},
	}
	if diff := cmp.Diff(want, a.Form()); diff != "" {
		t.Errorf("Form (-want +got):\n%s", diff)
	}
	if a.Info().Title != "Order form" {
		t.Errorf("title %q", a.Info().Title)
	}
	// What does not fit the form is refused, naming the field, and the
	// approval waits on.
	for content, field := range map[string]string{
		`{"qty":10}`: "qty", `{"qty":2.5}`: "qty", `{"qty":"2"}`: "qty", `{"qty":2,"email":"ab"}`: "email",
		`{"qty":2,"size":"l"}`: "size", `{"qty":2,"speed":3}`: "speed", `{"qty":2,"gift":"yes"}`: "gift", `{"qty":2,"colour":"red"}`: "colour",
		`{"qty":2,"email":"a b"}`: "email", `{}`: "qty", `{"qty":null}`: "qty",
	} {
		err := a.Accept(json.RawMessage(content))
		var fe *host.FormError
		if !errors.Is(err, host.ErrFormInvalid) || !errors.As(err, &fe) || fe.Field != field || !strings.Contains(err.Error(), `"`+field+`"`) {
			t.Errorf("Accept(%s) = %v, want a FormError naming %s", content, err, field)
		}
	}
	// The reason says what would fit.
	for content, reason := range map[string]string{
		`{"qty":10}`: "must be from 1 to 9", `{"qty":2.5}`: "must be a whole number", `{"qty":2,"size":"l"}`: "must be one of: Small, Medium",
		`{"qty":2,"email":"ab"}`: "must be at least 3 characters (that was 2)", `{"qty":2,"email":"abc"}`: "must be an email address, as ann@example.com",
		`{}`: "is required", `[1]`: "must be a JSON object",
	} {
		var fe *host.FormError
		if err := a.Accept(json.RawMessage(content)); !errors.As(err, &fe) || fe.Reason != reason {
			t.Errorf("Accept(%s) = %v, want the reason %q", content, err, reason)
		}
	}
	if err := a.Accept(json.RawMessage(`{"qty":2,"gift":true,"size":"m","speed":1,"email":"a@b.c"}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-answers; got != `{"action":"accept","content":{"qty":2,"gift":true,"size":"m","speed":1,"email":"a@b.c"}}` {
		t.Errorf("CLI got %s", got)
	}
	b := l.waitFor(t, ctx, "the page", func(v host.Liveness) bool { return v.Approval != nil && v.Approval != a }).Approval
	if b.Form() != nil || b.Info().Mode != "url" || b.Info().URL != "https://pay.invalid/x" {
		t.Errorf("page: form %v, info %+v", b.Form(), b.Info())
	}
	if err := b.Allow(); err != nil {
		t.Fatal(err)
	}
	if got := <-answers; got != `{"action":"accept"}` {
		t.Errorf("CLI got %s", got)
	}
	l.waitState(t, ctx, host.StateIdle)
}

// An elicitation is tied to the call of its server's tool that is
// running, the only one, on the main thread or in a subagent; with two
// calls to that server running, or none, it is tied to no call rather
// than to a guess.
func TestElicitationToolCall(t *testing.T) {
	ctx := testCtx(t)
	answers := make(chan string, 5)
	s, l := start(t, &host.Options{Elicitations: true}, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_other", "mcp__other__pick", map[string]any{}))
		inTask := func(m claudetest.Msg) claudetest.Msg { m["parent_tool_use_id"] = "toolu_task"; return m }
		for _, step := range []func(){
			func() { c.Write(c.AssistantToolUse("toolu_1", "mcp__deploy__pick", map[string]any{})) },
			func() { c.Write(c.AssistantToolUse("toolu_2", "mcp__deploy__pick", map[string]any{})) },
			func() { c.Write(c.ToolResult("toolu_1", "ok", false), c.ToolResult("toolu_2", "ok", false)) },
			// A subagent's call, the only one of the server's running.
			func() {
				c.Write(c.AssistantToolUse("toolu_task", "Task", map[string]any{"prompt": "deploy"}),
					inTask(c.AssistantToolUse("toolu_sub", "mcp__deploy__pick", map[string]any{})))
			},
			func() { c.Write(inTask(c.ToolResult("toolu_sub", "ok", false))) },
		} {
			step()
			raw, err := c.Request(ctx, "elicitation", deployForm)
			if err != nil {
				return err
			}
			answers <- string(raw)
		}
		c.Write(c.ToolResult("toolu_task", "ok", false), c.ToolResult("toolu_other", "ok", false), c.AssistantText("done"), c.ResultSuccess("done"))
		_, err := c.ReadUser(ctx)
		return err
	})
	s.Send(ctx, "deploy")
	var ids []string
	seen := map[*host.Approval]bool{}
	for range 5 {
		a := l.waitFor(t, ctx, "a request", func(v host.Liveness) bool { return v.Approval != nil && !seen[v.Approval] }).Approval
		ids = append(ids, a.Info().ToolUseID)
		if err := a.Deny("no"); err != nil {
			t.Fatal(err)
		}
		<-answers
		seen[a] = true
	}
	if want := []string{"toolu_1", "", "", "toolu_sub", ""}; !slices.Equal(ids, want) {
		t.Errorf("tied to %q, want %q", ids, want)
	}
}
