package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/tetherhq/tether/host"
)

// The REPL's commands about files (tether run -i, or any line typed
// while a run waits for a prompt): /diff shows what the session changed
// since it started (host.Session.Changes), each file with its diff;
// /revert [path…] puts files back (all of them without a path), after a
// confirmation that names them and says what is lost.

// slashCommand reports whether line is one of the REPL's commands.
func slashCommand(line string) bool {
	f := strings.Fields(line)
	return len(f) > 0 && (f[0] == "/diff" || f[0] == "/revert" || f[0] == "/tasks")
}

// showChanges prints the session's changes.
func showChanges(ctx context.Context, s *host.Session, v view) {
	cs, err := s.Changes(ctx)
	if err != nil {
		v.failure(fmt.Errorf("/diff: %w", err))
		return
	}
	switch v := v.(type) {
	case *jsonView:
		v.emit(jsonEvent{Type: "changes", Changes: cs})
	case *renderer:
		if len(cs) == 0 {
			v.note("no files changed since the session started")
			return
		}
		add, del := 0, 0
		for _, c := range cs {
			add, del = add+c.Added, del+c.Removed
		}
		v.note(fmt.Sprintf("%d %s changed since the session started (+%d −%d)", len(cs), plural(len(cs), "file", "files"), add, del))
		for _, c := range cs {
			name := cmpOr(c.Rel, c.Path)
			head := fmt.Sprintf("%s %s", c.Kind, name)
			if !c.Binary && !c.TooLarge {
				head += fmt.Sprintf("  +%d −%d", c.Added, c.Removed)
			}
			if len(c.Tools) > 0 {
				head += "  (" + strings.Join(c.Tools, ", ") + ")"
			} else {
				head += "  (seen by git)"
			}
			v.println("", styleBold, head)
			switch {
			case c.Binary:
				v.println("    ", styleDim, "binary file: no diff")
			case c.TooLarge:
				v.println("    ", styleDim, "too large to show")
			default:
				d := &fileDiff{path: c.Path, hunks: hunksOf(c.Old, c.New)}
				for _, l := range d.lines(v.color) {
					v.println("    ", "", l)
				}
			}
		}
	}
}

// revertAsk is a revert waiting for its confirmation.
type revertAsk struct {
	paths []string // nil: all
}

// askRevert shows what /revert args would throw away and returns the
// revert to confirm, or nil when there is nothing to revert.
func askRevert(ctx context.Context, s *host.Session, v view, args []string) *revertAsk {
	cs, err := s.Changes(ctx)
	if err != nil {
		v.failure(fmt.Errorf("/revert: %w", err))
		return nil
	}
	var which []host.FileChange
	for _, c := range cs {
		if len(args) == 0 {
			which = append(which, c)
			continue
		}
		for _, a := range args {
			if a == c.Path || a == c.Rel {
				which = append(which, c)
			}
		}
	}
	if len(which) == 0 {
		if len(args) == 0 {
			v.note("no files changed since the session started")
		} else {
			v.failure(fmt.Errorf("/revert: %s: not changed by this session", strings.Join(args, ", ")))
		}
		return nil
	}
	v.note(fmt.Sprintf("revert %d %s to the session's start? This is lost:", len(which), plural(len(which), "file", "files")))
	for _, c := range which {
		name := cmpOr(c.Rel, c.Path)
		switch {
		case c.Kind == host.FileCreated:
			v.note("  " + name + ": created by the session; it will be deleted")
		case c.Kind == host.FileDeleted:
			v.note("  " + name + ": deleted by the session; it will be restored")
		case c.Binary || c.TooLarge:
			v.note("  " + name + ": the session's changes")
		default:
			v.note(fmt.Sprintf("  %s: the session's changes (+%d −%d lines)", name, c.Added, c.Removed))
		}
	}
	v.note("type y to revert, anything else to keep them")
	var paths []string
	if len(args) > 0 {
		for _, c := range which {
			paths = append(paths, c.Path)
		}
	}
	return &revertAsk{paths: paths}
}

// answer takes the confirmation's line.
func (ra *revertAsk) answer(ctx context.Context, s *host.Session, v view, line string) {
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		v.note("not reverted")
		return
	}
	done, err := s.RevertChanges(ctx, ra.paths...)
	if err != nil {
		v.failure(fmt.Errorf("/revert: %w", err))
	}
	if len(done) > 0 {
		v.note(fmt.Sprintf("reverted %d %s", len(done), plural(len(done), "file", "files")))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
