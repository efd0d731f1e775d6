package claude

import (
	"bytes"
	"fmt"
	"path/filepath"
)

// Options of the TypeScript SDK (0.3.330) that are passed as the SDK
// passes them: ProjectConfigRoot and ResumeDropsTurn as flags, ToolConfig
// as environment variables, VerbatimPrompts as a member of each user
// message.

// ToolConfig configures built-in tools.
type ToolConfig struct {
	AskUserQuestion *AskUserQuestionConfig
}

// AskUserQuestionConfig configures the AskUserQuestion tool.
type AskUserQuestionConfig struct {
	// PreviewFormat is what the model writes in an option's preview:
	// PreviewMarkdown (the CLI's default) or PreviewHTML, self-contained
	// HTML fragments for hosts that render HTML. It changes what the tool
	// schema tells the model.
	PreviewFormat PreviewFormat
}

// PreviewFormat is the format of AskUserQuestion previews.
type PreviewFormat string

// Preview formats.
const (
	PreviewMarkdown PreviewFormat = "markdown"
	PreviewHTML     PreviewFormat = "html"
)

// EnvQuestionPreviewFormat is the environment variable through which
// ToolConfig.AskUserQuestion.PreviewFormat reaches the CLI; an Env entry
// for it wins.
const EnvQuestionPreviewFormat = "CLAUDE_CODE_QUESTION_PREVIEW_FORMAT"

func (o *Options) validateExtra() error {
	if o.ProjectConfigRoot != "" && !filepath.IsAbs(o.ProjectConfigRoot) {
		return fmt.Errorf("claude: Options.ProjectConfigRoot must be absolute (%q)", o.ProjectConfigRoot)
	}
	if o.ResumeDropsTurn != "" && o.ResumeSessionAt == "" {
		return fmt.Errorf("claude: Options.ResumeDropsTurn needs Options.ResumeSessionAt")
	}
	if t := o.ToolConfig; t != nil && t.AskUserQuestion != nil {
		switch f := t.AskUserQuestion.PreviewFormat; f {
		case "", PreviewMarkdown, PreviewHTML:
		default:
			return fmt.Errorf("claude: Options.ToolConfig: unknown AskUserQuestion preview format %q", f)
		}
	}
	return nil
}

// extraOptionArgs are the flags of the options in this file.
func (o *Options) extraOptionArgs() []string {
	var a []string
	if o.ProjectConfigRoot != "" {
		a = append(a, "--project-config-root="+o.ProjectConfigRoot)
	}
	if o.ResumeDropsTurn != "" {
		a = append(a, "--resume-drops-turn="+o.ResumeDropsTurn)
	}
	return a
}

// toolConfigEnv puts ToolConfig's variables, unless Env sets them.
func (o *Options) toolConfigEnv(put func(k, v string)) {
	if o.ToolConfig == nil || o.ToolConfig.AskUserQuestion == nil || o.ToolConfig.AskUserQuestion.PreviewFormat == "" {
		return
	}
	if _, ok := o.Env[EnvQuestionPreviewFormat]; !ok {
		put(EnvQuestionPreviewFormat, string(o.ToolConfig.AskUserQuestion.PreviewFormat))
	}
}

// clientComposed marks an encoded user message as composed by the
// client (VerbatimPrompts): {"client_composed":true,...}.
func clientComposed(line []byte) []byte {
	if len(line) < 2 || line[0] != '{' || bytes.Contains(line, []byte(`"client_composed":`)) {
		return line
	}
	out := make([]byte, 0, len(line)+24)
	out = append(out, `{"client_composed":true`...)
	if rest := bytes.TrimSpace(line[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, line[1:]...)
}
