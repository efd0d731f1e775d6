package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// A view is how a session is shown: a renderer for people, jsonView for
// scripts (--json).
type view interface {
	message(m claude.Message)
	setState(l host.Liveness)
	showApproval(k *asking)
	note(text string)
	failure(err error)
	prompt()
	// suggest offers the CLI's guess at the next prompt (-i with
	// --prompt-suggestions): an empty line sends it.
	suggest(text string)
	drawStatus()
	end(c host.Cost)
}

func (r *renderer) failure(err error) { r.println("", styleRed, "✗ "+err.Error()) }

func (r *renderer) end(c host.Cost) {
	r.closeBlock()
	r.newline()
	r.hideStatus()
	r.println("", styleDim, costSummary(c))
}

// loopConfig is what runSession needs besides the streams.
type loopConfig struct {
	opts        host.Options
	prompt      string // the first prompt; "" waits for one (interactive)
	interactive bool   // -i: keep the session open for more prompts
	json        bool
	yes         bool // allow every tool, answer every question with its first option
	thinking    thinkingMode
	// notes are lines to show from elsewhere (the demo's hook); closed or
	// nil when there are none.
	notes chan string
	// starting is printed while the CLI starts (not in JSON mode).
	starting string
}

type msgErr struct {
	m   claude.Message
	err error
}

type interruptDone struct {
	step host.InterruptStep
	err  error
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	if f, ok := f.(*os.File); ok {
		return term.IsTerminal(int(f.Fd()))
	}
	return false
}

// runSession runs one host session in the terminal (or for a script):
// it sends the prompts, shows what happens, asks the person about
// approvals, and handles Ctrl-C. It returns the exit code.
func runSession(ctx context.Context, cfg loopConfig, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tty := isTerminal(stdout)
	stdinTTY := isTerminal(stdin)
	var v view
	var r *renderer
	var sess *host.Session
	costFn := func() host.Cost {
		if sess == nil {
			return host.Cost{}
		}
		return sess.Cost()
	}
	if cfg.json {
		v = &jsonView{enc: json.NewEncoder(stdout)}
	} else {
		r = newRenderer(stdout, tty, tty && os.Getenv("NO_COLOR") == "", cfg.thinking, costFn)
		if f, ok := stdout.(*os.File); ok && tty {
			r.width = func() int {
				w, _, err := term.GetSize(int(f.Fd()))
				if err != nil {
					return 0
				}
				return w
			}
		}
		v = r
	}

	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)

	notes := cfg.notes
	if notes == nil {
		notes = make(chan string)
	}
	opts := cfg.opts
	cliOpts := claude.Options{}
	if opts.CLI != nil {
		cliOpts = *opts.CLI
	}
	cliOpts.IncludePartialMessages = true
	if cfg.yes {
		cliOpts.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			var res claude.PermissionResult = &claude.PermissionAllow{}
			said := "--yes: allowed " + req.ToolName
			if req.ToolName == "AskUserQuestion" {
				qs, err := req.Questions()
				if err == nil && len(qs) > 0 {
					hq := make([]host.Question, len(qs))
					for i, q := range qs {
						hq[i] = host.Question{Question: q.Question, Header: q.Header, MultiSelect: q.MultiSelect}
						for _, o := range q.Options {
							hq[i].Options = append(hq[i].Options, host.QuestionOption{Label: o.Label, Description: o.Description})
						}
					}
					answers := firstOptions(hq)
					if a, err := claude.AnswerQuestions(req, answers); err == nil {
						res = a
						said = "--yes: answered"
						for _, q := range hq {
							said += fmt.Sprintf(" %q → %s", q.Question, answers[q.Question])
						}
					}
				}
			}
			select {
			case notes <- said:
			case <-ctx.Done():
			}
			return res, nil
		}
	}
	opts.CLI = &cliOpts
	// An MCP server's request for input is asked here like a question;
	// an unattended run (--yes) declines it, as claude does unasked.
	opts.Elicitations = !cfg.yes

	if cfg.starting != "" && !cfg.json {
		r.note(cfg.starting)
	}
	s, err := host.Start(ctx, &opts)
	if err != nil {
		v.failure(fmt.Errorf("starting the CLI: %w", err))
		var nf *claude.CLINotFoundError
		if errors.As(err, &nf) || errors.Is(err, claude.ErrCLINotFound) {
			fmt.Fprintf(stderr, "tether: install the CLI with `npm install -g @anthropic-ai/claude-code`, or pass --cli\n")
		}
		return 1
	}
	sess = s
	var wg sync.WaitGroup
	defer func() {
		cancel()
		s.Close()
		wg.Wait()
	}()

	// Subscribe before the first prompt, so nothing is missed.
	msgSeq := s.Messages(ctx)
	stateSeq := s.Watch(ctx)
	msgs := make(chan msgErr)
	states := make(chan host.Liveness)
	lines := make(chan string)
	answered := make(chan error)
	intDone := make(chan interruptDone, 1)
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(msgs)
		for m, err := range msgSeq {
			select {
			case msgs <- msgErr{m, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for l := range stateSeq {
			select {
			case states <- l:
			case <-ctx.Done():
				return
			}
		}
	}()
	// The reader of stdin may stay blocked in Read after we return (a
	// terminal never ends); it holds nothing and exits with the process.
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()

	// suggestion is the CLI's guess at the next prompt (a
	// prompt_suggestion after a result), offered while the loop waits for
	// one: an empty line sends it. A result or a prompt sent makes it
	// stale.
	suggestion := ""
	pending := 0                  // prompts sent and not yet answered
	awaiting := map[string]bool{} // results of answered prompts not yet shown
	shown := map[string]bool{}    // results shown, by uuid
	var lastResult error
	send := func(prompt string) {
		suggestion = ""
		d, err := s.Send(ctx, prompt)
		if err != nil {
			v.failure(err)
			return
		}
		pending++
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := d.Wait(ctx)
			if res != nil && res.UUID != "" {
				err = errResult{uuid: res.UUID, err: err}
			}
			select {
			case answered <- err:
			case <-ctx.Done():
			}
		}()
	}
	waitingForPrompt := false
	askPrompt := func() {
		waitingForPrompt = true
		if suggestion != "" {
			v.suggest(suggestion)
		}
		v.prompt()
	}
	if cfg.prompt != "" {
		send(cfg.prompt)
	} else {
		askPrompt()
	}

	var tick <-chan time.Time
	if tty && !cfg.json {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	var cur *asking
	presented := map[string]bool{}
	stdinClosed := false
	interrupting := false
	quitting := false
	exit := -1
	var ended error // why the session ended, once msgs is closed

	// turnOver reports that every prompt sent was answered and shown.
	turnOver := func() bool { return pending == 0 && len(awaiting) == 0 }
	// A run ends when the CLI has nothing left running, as claude.Query
	// does, not at the first result: a background task (an agent the
	// model started in the background) outlives the turn, and the CLI
	// starts a turn of its own for its report. A CLI that reports its
	// states says it is done by going idle with no task left; one that
	// does not, by a result with no task left. Watchers (ambient tasks)
	// are no work: the run does not wait for them. The wait is bounded
	// (claude.DefaultQueryTaskTimeout); Ctrl-C ends it, and the tasks.
	sawStates, cliIdle := false, false
	var tasks []host.TaskInfo // the background tasks, as last noted
	var taskTimer *time.Timer
	var taskWait <-chan time.Time
	defer func() {
		if taskTimer != nil {
			taskTimer.Stop()
		}
	}()
	finishTurn := func() {
		if !turnOver() || waitingForPrompt {
			return
		}
		if !cfg.interactive || stdinClosed {
			if running := host.WorkingTasks(s.Tasks()); len(running) > 0 || (sawStates && !cliIdle) {
				if taskTimer == nil {
					taskTimer = time.NewTimer(claude.DefaultQueryTaskTimeout)
					taskWait = taskTimer.C
					if n := len(running); n > 0 {
						v.note(fmt.Sprintf("waiting for %d background %s to end (Ctrl-C stops %s and quits)",
							n, plural(n, "task", "tasks"), plural(n, "it", "them")))
					}
				}
				return
			}
			exit = 0
			var re *claude.ResultError
			if errors.As(lastResult, &re) {
				exit = 1
				if re.Interrupted() {
					exit = 130
				}
			} else if lastResult != nil {
				exit = 1
			}
			return
		}
		askPrompt()
	}

	// handle takes a line the person typed.
	var typed []string
	var reverting *revertAsk // a /revert waiting for its y
	handle := func(line string) {
		if !stdinTTY && !cfg.json && (cur != nil || waitingForPrompt) {
			r.write(line + "\n") // echo what a script typed, as a terminal would
		} else if r != nil {
			r.col = 0 // the terminal echoed the line and its newline
		}
		switch {
		case cur != nil:
			done, said, err := cur.answer(line)
			switch {
			case err != nil && withdrawn(err):
				v.note("(the CLI no longer waits for that answer)")
				cur = nil
			case err != nil:
				v.failure(err)
				cur = nil
			case done:
				v.note(said)
				cur = nil
			default:
				if said != "" {
					v.note(said)
				}
				v.showApproval(cur)
			}
		case reverting != nil:
			reverting.answer(ctx, s, v, line)
			reverting = nil
			if waitingForPrompt {
				v.prompt()
			}
		case (waitingForPrompt || cfg.interactive) && slashCommand(line):
			f := strings.Fields(line)
			switch f[0] {
			case "/diff":
				showChanges(ctx, s, v)
			case "/tasks":
				taskCommand(ctx, s, v, f[1:])
			default:
				reverting = askRevert(ctx, s, v, f[1:])
			}
			if waitingForPrompt {
				v.prompt()
			}
		case waitingForPrompt:
			if line == "" && suggestion == "" {
				v.prompt()
				break
			}
			if line == "" {
				line = suggestion
				v.note("sent the suggestion: " + line)
			}
			waitingForPrompt = false
			send(line)
		case cfg.interactive && line != "":
			send(line) // queued: the CLI merges it into its next turn
			v.note("(queued for the next turn)")
		case !cfg.interactive:
			typed = append(typed, line) // typed ahead: the next approval's answer
		}
	}

	// A run ends once the session's state has caught up with the end of
	// the turn (it comes on its own channel), so that the last state shown
	// is idle, not the turn's last step.
	live := s.State()
	for exit < 0 || (msgs != nil && live.State.Busy() && !quitting) {
		select {
		case me, ok := <-msgs:
			if !ok {
				msgs = nil
				if !errors.Is(ended, claude.ErrClosed) && ended != nil {
					v.failure(fmt.Errorf("the CLI ended: %w", ended))
				}
				exit = 1
				if interrupting {
					exit = 130
				}
				break
			}
			if me.m != nil {
				v.message(me.m)
				switch m := me.m.(type) {
				case *claude.TaskStartedMessage, *claude.TaskNotificationMessage, *claude.TaskUpdatedMessage, *claude.BackgroundTasksChangedMessage:
					tasks = noteTasks(v, tasks, s.Tasks())
				case *claude.SessionStateChangedMessage:
					sawStates, cliIdle = true, m.State == "idle"
					if cliIdle && taskWait != nil {
						finishTurn() // the CLI is done: the run may end
					}
				}
				if ps, ok := me.m.(*claude.PromptSuggestionMessage); ok && cfg.interactive {
					suggestion = strings.TrimSpace(ps.Suggestion)
					if suggestion != "" && waitingForPrompt {
						v.suggest(suggestion)
						v.prompt()
					}
				}
				if res, ok := me.m.(*claude.ResultMessage); ok {
					suggestion = ""
					shown[res.UUID] = true
					delete(awaiting, res.UUID)
					lastResult = res.Err()
					finishTurn()
				}
			} else if me.err != nil {
				ended = me.err
				var le *claude.LineError
				if errors.As(me.err, &le) {
					v.failure(me.err)
				}
			}
		case l := <-states:
			live = l
			v.setState(l)
			if l.State == host.StateDisconnected {
				ended = l.Err
			}
		case err := <-answered:
			pending--
			var er errResult
			if errors.As(err, &er) {
				if !shown[er.uuid] {
					awaiting[er.uuid] = true
				}
			} else if err != nil && !errors.Is(err, context.Canceled) {
				v.failure(err)
				lastResult = err
			}
			finishTurn()
		case <-taskWait:
			taskWait = nil
			working := host.WorkingTasks(tasks)
			v.failure(fmt.Errorf("%d background %s still running %v after the result; quitting stops %s",
				len(working), plural(len(working), "task", "tasks"), claude.DefaultQueryTaskTimeout, plural(len(working), "it", "them")))
			exit, quitting = 1, true
		case line, ok := <-lines:
			if !ok {
				lines = nil
				stdinClosed = true
				if cur != nil && len(typed) == 0 {
					if err := cur.a.Deny("No answer: the user's input is closed."); err == nil {
						v.note("denied " + cur.a.Request.ToolName + ": no answer (stdin closed)")
					}
					cur = nil
				}
				if waitingForPrompt || (pending == 0 && len(awaiting) == 0) {
					if len(host.WorkingTasks(s.Tasks())) > 0 {
						// Work in the background: the run ends when it
						// does, as one without -i, not by killing it.
						waitingForPrompt = false
						finishTurn()
						break
					}
					exit = 0
				}
				break
			}
			handle(line)
		case n, ok := <-notes:
			if !ok {
				notes = nil
				break
			}
			v.note(n)
		case <-interrupts:
			busy := s.State().State.Busy() || pending > 0
			if interrupting || !busy {
				v.note("quitting")
				exit, quitting = 130, true
				break
			}
			interrupting = true
			v.note("interrupting… (Ctrl-C again to quit)")
			wg.Add(1)
			go func() {
				defer wg.Done()
				step, err := s.ForceInterrupt(ctx)
				intDone <- interruptDone{step, err}
			}()
		case d := <-intDone:
			interrupting = false
			switch {
			case d.err != nil && !errors.Is(d.err, context.Canceled):
				v.failure(fmt.Errorf("interrupt: %w", d.err))
			case d.step == host.InterruptedBySignal || d.step == host.InterruptedByKill:
				v.note("the CLI did not stop on request; stopped it with " + d.step.String())
			}
		case <-tick:
		}
		// The approval being answered may have been withdrawn (an
		// interrupt); the next one is shown when none is.
		if exit < 0 && !cfg.yes {
			approvals := s.Approvals()
			if cur != nil && !contains(approvals, cur.a) {
				v.note("(" + cur.a.Request.ToolName + ": the request was withdrawn)")
				cur = nil
			}
			if cur == nil {
				for _, a := range approvals {
					if presented[a.ID()] {
						continue
					}
					presented[a.ID()] = true
					if stdinClosed && len(typed) == 0 {
						if a.Deny("No answer: the user's input is closed.") == nil {
							v.note("denied " + a.Request.ToolName + ": no answer (stdin closed)")
						}
						continue
					}
					if a.Kind == host.ApprovalQuestion && len(a.Questions) == 0 {
						_ = a.Deny("The question had no questions in it.")
						continue
					}
					cur = newAsking(a)
					v.showApproval(cur)
					for cur != nil && len(typed) > 0 {
						line := typed[0]
						typed = typed[1:]
						handle(line)
					}
					break
				}
			}
		}
		v.drawStatus()
	}
	noteTasksEnd(v, s.Tasks())
	v.end(s.Cost())
	return exit
}

func contains(as []*host.Approval, a *host.Approval) bool {
	for _, p := range as {
		if p == a {
			return true
		}
	}
	return false
}

// errResult carries the uuid of the result that answered a prompt.
type errResult struct {
	uuid string
	err  error
}

func (e errResult) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return "answered by " + e.uuid
}

func (e errResult) Unwrap() error { return e.err }

func asResultError(err error, re **claude.ResultError) bool { return errors.As(err, re) }
