package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Typed inputs of Claude Code's built-in tools, for reading what the model
// asks a tool to do: in CanUseTool (ToolPermissionRequest.Input), in hooks
// (the tool input they receive) and in transcripts (ToolUseBlock.Input).
//
//	in, err := claude.DecodeInput[claude.BashInput](req.Input)
//	if err == nil && strings.Contains(in.Command, "rm -rf") {
//		return &claude.PermissionDeny{Message: "not that"}, nil
//	}
//
// The types are generated (tools_input_gen.go) from the TypeScript
// SDK's sdk-tools.d.ts by internal/sdkgen, whose mapping tables keep
// their Go names and documentation; this file holds what Go needs beyond
// the declarations: the decoding, the types of tuples and records the
// declarations cannot name, and the inputs of tools the SDK no longer
// declares but older CLIs still run. The inputs a
// permission request carries have been checked and normalised by the CLI
// (file paths made absolute, defaults such as Edit's replace_all filled
// in); those in an assistant message are as the model wrote them.
//
// Optional fields whose zero value would mean something other than
// "absent" are pointers, so that a decoded and re-encoded input (for
// PermissionAllow.UpdatedInput) keeps its meaning. Re-encoding drops the
// keys a type doesn't know; to change one field and keep the rest, edit
// the raw JSON instead.

//go:generate go run ../internal/sdkgen -o .

// DecodeInput decodes a tool's input (a ToolPermissionRequest's or a
// ToolUseBlock's Input, or a hook's tool input) into T, one of the
// *Input types of this package or a type of the caller's own (for MCP
// tools). Keys T doesn't know are ignored, so newer CLIs decode.
func DecodeInput[T any](input json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(input, &v); err != nil {
		return v, fmt.Errorf("claude: decoding %T tool input: %w", v, err)
	}
	return v, nil
}

// ToolInput is the typed input of a built-in tool, as returned by
// DecodeToolInput: one *…Input type of this package for each built-in
// tool whose input the TypeScript SDK declares (*BashInput, *EditInput,
// *AgentInput, *TaskCreateInput, *EnterWorktreeInput, …; docs/parity.md
// lists them all), or *UnknownToolInput for any other tool (MCP tools,
// tools newer than this package, tools without input).
type ToolInput interface {
	// ToolName is the name the model calls the tool by.
	ToolName() string
	isToolInput()
}

// DecodeToolInput decodes the input of the tool named toolName into its
// type, for a type switch:
//
//	in, err := claude.DecodeToolInput(req.ToolName, req.Input)
//	switch in := in.(type) {
//	case *claude.BashInput:
//		log.Printf("run %q", in.Command)
//	case *claude.WriteInput:
//		log.Printf("write %s", in.FilePath)
//	}
//
// A tool it has no type for gives an *UnknownToolInput and no error.
func DecodeToolInput(toolName string, input json.RawMessage) (ToolInput, error) {
	newInput, ok := toolInputs[toolName]
	if !ok {
		newInput, ok = formerToolInputs[toolName]
	}
	if !ok {
		return &UnknownToolInput{Name: toolName, Raw: input}, nil
	}
	v := newInput()
	if err := json.Unmarshal(input, v); err != nil {
		return nil, fmt.Errorf("claude: decoding %s tool input: %w", toolName, err)
	}
	return v, nil
}

// UnknownToolInput is the input of a tool DecodeToolInput has no type for.
type UnknownToolInput struct {
	Name string
	Raw  json.RawMessage
}

// formerToolInputs maps the tools the SDK declares no more, but older
// CLIs still offer, to their input types.
var formerToolInputs = map[string]func() ToolInput{
	"TaskOutput": func() ToolInput { return new(TaskOutputInput) }, // 2.1.197
}

// TaskOutputInput reads a background task's output (2.1.197).
type TaskOutputInput struct {
	TaskID  string `json:"task_id"`
	Block   bool   `json:"block"`   // wait for the task to finish
	Timeout int    `json:"timeout"` // milliseconds to wait at most
}

// QuestionAnnotation is what the user added to an answer (the
// declarations give AskUserQuestionInput.annotations as a record).
type QuestionAnnotation struct {
	Preview string `json:"preview,omitempty"`
	Notes   string `json:"notes,omitempty"`
	// Unanswered says why a question has no answer (in a result):
	// skipped, replied_in_chat, dismissed.
	Unanswered string `json:"unanswered,omitempty"`
}

// SkillProposal is one proposal of a ProposeSkillsInput (which the
// declarations give as a tuple of one to three).
type SkillProposal struct {
	Name string `json:"name"`
	// Kind is "new" or "improvement"; Target names the skill an
	// improvement changes.
	Kind        string      `json:"kind"`
	Target      string      `json:"target,omitempty"`
	Description string      `json:"description"`
	Evidence    []string    `json:"evidence,omitempty"`
	Edits       []SkillEdit `json:"edits,omitempty"`
	// SkillMD is a whole SKILL.md, for a new skill or a rewrite.
	SkillMD string `json:"skillMd,omitempty"`
}

// SkillEdit replaces text in a skill's SKILL.md.
type SkillEdit struct {
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
}

func (*TaskOutputInput) ToolName() string    { return "TaskOutput" }
func (u *UnknownToolInput) ToolName() string { return u.Name }

func (*TaskOutputInput) isToolInput()  {}
func (*UnknownToolInput) isToolInput() {}

// AnswerQuestions answers an AskUserQuestion permission request: it allows
// the tool with the request's input plus answers, which map a question's
// text to the chosen option's label (for a MultiSelect question, the
// labels joined by ", "; free text is accepted too). The model then reads
// the answers as the tool's result.
//
//	if req.ToolName == "AskUserQuestion" {
//		return claude.AnswerQuestions(req, map[string]string{"Which database?": "Postgres"})
//	}
//
// The CLI offers the model AskUserQuestion only when the host answers
// permission requests (Options.CanUseTool is set). Questions left out
// stay unanswered. It fails when req is not an
// AskUserQuestion request, when answers is empty (deny the request to
// skip the questions) or names a question the request doesn't ask.
func AnswerQuestions(req *ToolPermissionRequest, answers map[string]string) (*PermissionAllow, error) {
	if req == nil || req.ToolName != "AskUserQuestion" {
		name := "nil"
		if req != nil {
			name = req.ToolName
		}
		return nil, fmt.Errorf("claude: AnswerQuestions: request is for %s, not AskUserQuestion", name)
	}
	if len(answers) == 0 {
		return nil, errors.New("claude: AnswerQuestions: no answers (deny the request to skip the questions)")
	}
	in, err := DecodeInput[AskUserQuestionInput](req.Input)
	if err != nil {
		return nil, fmt.Errorf("claude: AnswerQuestions: %w", err)
	}
	for q := range answers {
		if !slices.ContainsFunc(in.Questions, func(x Question) bool { return x.Question == q }) {
			return nil, fmt.Errorf("claude: AnswerQuestions: the request has no question %q", q)
		}
	}
	// Add answers to the input as the CLI sent it, so that nothing the
	// types above don't know is lost.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(req.Input, &members); err != nil {
		return nil, fmt.Errorf("claude: AnswerQuestions: %w", err)
	}
	a, err := json.Marshal(answers)
	if err != nil {
		return nil, fmt.Errorf("claude: AnswerQuestions: %w", err)
	}
	members["answers"] = a
	updated, err := json.Marshal(members)
	if err != nil {
		return nil, fmt.Errorf("claude: AnswerQuestions: %w", err)
	}
	return &PermissionAllow{UpdatedInput: updated}, nil
}
