// Package host keeps a UI honest about Claude Code sessions: what the
// agent is doing right now, what waits for a person, what each prompt
// became and what it all cost. Web UIs, IDE extensions and bots all need
// this; package host builds it once on top of package claude, tested
// against the real CLI.
//
// # Sessions
//
// Start starts a CLI and returns a *Session that owns its receive loop.
// From the CLI's messages, its control requests (in stream order), its
// session_state_changed events and its exit, the session derives:
//
//   - one liveness State (starting, ready, requesting, thinking,
//     streaming, running_tool, awaiting_approval, awaiting_answer,
//     interrupting, idle, error, disconnected, asleep, waking), changed
//     in exactly one place: read it with State, follow it with Watch (no
//     transition is dropped; a watcher far behind gets them coalesced
//     and is told how many it missed), and LastEvent says when the CLI
//     last spoke;
//   - Drafts: the assistant message being written, token by token, tool
//     input included (see claude.Accumulator);
//   - a Delivery per prompt: queued, accepted when the CLI echoes it,
//     answered by the result of the turn it was merged into (the CLI
//     merges prompts sent during a turn into one next turn), cancelled
//     (CancelMessage) or lost;
//   - Approvals: tool permission requests and AskUserQuestion questions
//     as data, answerable by id from any goroutine, exactly once;
//   - Cost: tokens counted once per API message, reconciled with each
//     turn's result, and the CLI's own dollar figure.
//   - Tasks: the background tasks the CLI runs (agents started in the
//     background, backgrounded shell commands), which outlive their turn
//     so that a session can be idle while work goes on; CommandStopTask
//     stops one, and the turn's interrupt leaves them at work where the
//     CLI allows it (Options.InterruptStopsTasks).
//
// Messages hands the messages on to any number of subscribers, each with
// its own bounded queue (one that falls behind is told it missed some);
// nobody has to read them for the rest to work.
//
// # The journal
//
// Everything a remote UI needs is also recorded as data in a bounded
// journal of sequenced Events (state changes, every CLI line, approvals
// added and resolved, deliveries, cost, the end), JSON as they are, so a
// browser bridge or a message bus can carry them unchanged. Events(ctx,
// after) yields exactly the events after a sequence number, live; a
// subscriber that falls out of the journal's bounds is told to resync
// (ErrResync) and starts again from a Snapshot, which holds the state,
// the transcript so far, pending approvals, deliveries and cost, as of
// its Seq. A slow subscriber never slows the session or anyone else.
//
// # Interrupts
//
// Interrupt asks the CLI to stop the turn; DenyAndInterrupt answers the
// pending approval with a deny that also ends the turn; ForceInterrupt
// falls back to SIGINT and then to killing the CLI when it does not
// listen. A RestartPolicy brings a CLI that died back, resuming the
// conversation by its session id.
//
// # Many sessions
//
// A Manager runs many sessions in one process: Start (from prewarmed
// spares, hiding the CLI's start-up second), Get, Sessions, idle reaping
// and Close.
//
// # Sessions that sleep
//
// An open session nobody uses still costs its CLI process. Sleep closes
// the CLI of a session with nothing to do and keeps the session (id,
// journal numbering, transcript, cost, options): StateAsleep, no
// process. The next command wakes it (StateWaking): a CLI starts again
// resuming the conversation, then the command runs; a prompt is never
// dropped. ManagerOptions.SleepAfter does it for sessions idle that
// long; Options.OnWake checks and sets up a wake as a start is (a team's
// policy, a sandbox). Nothing sleeps unless asked.
//
// # What changed
//
// Changes lists every file the session created, changed or deleted since
// it started, each with its diff: the edit tools' own results (Edit,
// Write, MultiEdit, NotebookEdit) say what each file was before, and
// where the working directory is in a git repository git finds the rest
// (a Bash command's edits, a commit) against the commit of the start.
// RevertChanges puts files back, through the CLI's rewind_files when it
// keeps checkpoints, else from the originals and git. Both are commands
// too (changes, revert_changes), so every front end has them, checked
// like any other; an EventFilesChanged says when to ask again.
//
// # Sessions side by side
//
// Options.Worktree runs a session in a git worktree of its own, on a new
// branch made from the branch checked out in its working directory, so
// that sessions on one repository never touch each other's files.
// Commands then merge the work into that base branch
// (CommandWorktreeMerge: all or nothing, a conflict refused with a
// *WorktreeConflictError), keep the branch (CommandWorktreeKeep) or
// discard it (CommandWorktreeDiscard, confirmed). A close of a session
// with unmerged work is refused (ErrWorktreeUnmerged) unless
// Command.Worktree says keep or discard; Session.Close, a Manager's
// Close and idle reaping leave worktrees as they are. Nothing is deleted
// silently.
package host
