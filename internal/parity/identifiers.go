package parity

import (
	"fmt"
	"slices"
	"strings"
)

// Options and Query rows are matched to the Go API by name, and a name
// that exists is not enough: `fallbackModel` covered by `Options.Model`
// names a real field, the wrong one. CheckIdentifiers makes such a row
// fail: a covered row must name the Go member whose name is the
// TypeScript one (case and the Go initialisms aside: maxBudgetUsd is
// MaxBudgetUSD), or the member Renamed gives it.

// Renamed maps an Options field or Query method ("Options.plugins",
// "Query.getContextUsage") to the Go member that carries it under
// another name. It is code, reviewed as code: a new entry is a claim
// that the Go name does the TypeScript one's job.
var Renamed = map[string]string{
	"Options.abortController":            "Query",
	"Options.additionalDirectories":      "Options.AddDirs",
	"Options.loadTimeoutMs":              "Options.SessionStoreLoadTimeout",
	"Options.outputFormat":               "Options.JSONSchema",
	"Options.pathToClaudeCodeExecutable": "Options.CLIPath",
	"Options.permissionPrompts":          "Options.CanUseTool",
	"Options.persistSession":             "Options.NoSessionPersistence",
	"Options.plugins":                    "Options.PluginDirs",
	"Options.spawnClaudeCodeProcess":     "Options.Transport",

	"Query.accountInfo":          "InitializeResponse.Account",
	"Query.getContextUsage":      "Session.ContextUsage",
	"Query.initializationResult": "Session.Initialize",
	"Query.mcpServerStatus":      "Session.MCPStatus",
	"Query.streamInput":          "Session.SendMessage",
	"Query.supportedAgents":      "InitializeResponse.Agents",
	"Query.supportedCommands":    "InitializeResponse.Commands",
	"Query.supportedModels":      "InitializeResponse.Models",
	"Query.usage_EXPERIMENTAL_MAY_CHANGE_DO_NOT_RELY_ON_THIS_API_YET": "Session.Usage",
}

// identifierOwners are the Go types whose members may carry a section's
// names under the same name.
var identifierOwners = map[string]struct {
	key    string   // the Renamed prefix
	owners []string // Go types
}{
	SectionOptions: {"Options.", []string{"Options"}},
	SectionQuery:   {"Query.", []string{"Session"}},
}

// CheckIdentifiers checks the covered Options and Query rows against
// the Go names they give, and Renamed against the table.
func CheckIdentifiers(rows []Row) (problems []string) {
	used := map[string]bool{}
	for _, r := range rows {
		o, ok := identifierOwners[r.Section]
		if !ok || r.Status != Covered {
			continue
		}
		where := fmt.Sprintf("line %d (%s: %s)", r.Line, r.Section, r.Name)
		want := make([]string, 0, len(o.owners))
		for _, t := range o.owners {
			want = append(want, t+"."+goCase(r.Name))
		}
		same := slices.ContainsFunc(r.Tether, func(g string) bool {
			return slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(g, w) })
		})
		key := o.key + r.Name
		ren, renamed := Renamed[key]
		used[key] = true
		switch {
		case same && renamed:
			problems = append(problems, fmt.Sprintf("%s: the row names %s itself; remove %q from Renamed", where, strings.Join(want, " or "), key))
		case renamed && !slices.Contains(r.Tether, ren):
			problems = append(problems, fmt.Sprintf("%s: Renamed gives %s, which the row does not name", where, ren))
		case !same && !renamed:
			problems = append(problems, fmt.Sprintf("%s: names none of %s; name it, or, if the Go API carries it under another name, add %q to Renamed in internal/parity/identifiers.go", where, strings.Join(want, " or "), key))
		}
	}
	for _, k := range sortedKeys(Renamed) {
		if !used[k] {
			problems = append(problems, fmt.Sprintf("Renamed: %s is no covered row of the table (remove the entry)", k))
		}
	}
	return problems
}

// goCase is a TypeScript name as Go spells it, up to the case of
// initialisms, which the comparison ignores: setModel → SetModel.
func goCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WireNames maps a field of a type the TypeScript SDK hands a callback
// ("ElicitationRequest.serverName") to the JSON name the CLI sends it
// under: the SDK renames the wire's snake_case for its callback, and
// Tether's Go type keeps the wire's names. The field then counts as
// covered by a Go field with that JSON name, and by no other. Like
// Renamed, each entry is a reviewed claim.
var WireNames = map[string]string{
	"ElicitationRequest.serverName":      "mcp_server_name",
	"ElicitationRequest.elicitationId":   "elicitation_id",
	"ElicitationRequest.requestedSchema": "requested_schema",
	"ElicitationRequest.displayName":     "display_name",
	"UserDialogRequest.dialogKind":       "dialog_kind",
	"UserDialogRequest.toolUseID":        "tool_use_id",
}
