package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/team"
)

// auditDetailWidth bounds the table's detail column; --jsonl has it all.
const auditDetailWidth = 100

// auditCmd is `tether audit`: the team's audit log, as a table or JSONL.
func auditCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tether audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: tether audit (--state DIR | --nats URL [NATS flags]) [flags]

Prints the audit log of a team (tether serve --team): sign-ins and
refusals, sessions started, shared and closed, prompts, approvals, mode
and model changes, policy refusals. Oldest first, at most --limit
events. --state reads the JetStream server of a one-machine team from
its state folder; --nats reads a cluster's. Reading needs the NATS
credentials of the team's server: whoever has them can read the log.

Times (--since, --until) are a duration before now (24h, 90m, 7d) or an
RFC 3339 time (2025-06-01T09:00:00Z). --action is one of
%s.

Flags:
`, wrapWords(strings.Join(team.AuditActions(), ", "), 72))
		fs.PrintDefaults()
	}
	var nf natsFlags
	fs.StringVar(&nf.url, "nats", "", "the NATS server(s) of the cluster whose audit log to read, comma-separated")
	// The connection flags of tether agent, without the ones that
	// configure streams this command never creates.
	conn := flag.NewFlagSet("", flag.ContinueOnError)
	addNATSFlags(conn, &nf)
	conn.VisitAll(func(f *flag.Flag) {
		if f.Name != "replicas" && f.Name != "heartbeat" {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	state := fs.String("state", "", "the state folder of tether serve --team on this machine (its nats.json says where the log is)")
	since := fs.String("since", "24h", "events from this time on (a duration before now or an RFC 3339 time; \"\": from the start)")
	until := fs.String("until", "", "events before this time (a duration before now or an RFC 3339 time)")
	actor := fs.String("actor", "", "only this person's events (their e-mail address or subject)")
	session := fs.String("session", "", "only this session's events")
	action := fs.String("action", "", "only events of this action")
	limit := fs.Int("limit", 1000, "at most this many events (0: no limit)")
	jsonl := fs.Bool("jsonl", false, "print JSON Lines (one event per line, every field) instead of a table")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tether audit: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected arguments %q", fs.Args())
	}
	// The first connection flag given, --nats included.
	natsSet, connSet := "", ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "nats" && natsSet == "" {
			natsSet = f.Name
		}
		if conn.Lookup(f.Name) != nil && connSet == "" {
			connSet = f.Name
			natsSet = f.Name
		}
	})
	switch {
	case *state != "" && natsSet != "":
		return usageErr("--state and --%s exclude each other: the state folder says how to connect", natsSet)
	case *state == "" && nf.url == "" && connSet != "":
		return usageErr("--%s goes with --nats URL", connSet)
	case *state == "" && nf.url == "":
		return usageErr("say where the log is: --state DIR (tether serve --team on this machine) or --nats URL (a cluster)")
	}
	now := time.Now()
	q := &team.AuditQuery{Actor: *actor, Session: *session, Action: *action, Limit: *limit}
	var err error
	if q.Since, err = parseAuditTime(*since, now); err != nil {
		return usageErr("--since: %v", err)
	}
	if q.Until, err = parseAuditTime(*until, now); err != nil {
		return usageErr("--until: %v", err)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return usageErr("--until (%s) is not after --since (%s)", q.Until.Format(time.RFC3339), q.Since.Format(time.RFC3339))
	}
	if q.Action != "" && !validAction(q.Action) {
		return usageErr("--action %q is not one of %s", q.Action, strings.Join(team.AuditActions(), ", "))
	}
	if q.Limit < 0 {
		return usageErr("--limit %d is negative", q.Limit)
	}
	if *timeout <= 0 {
		return usageErr("--timeout must be positive")
	}

	url := nf.url
	nopts, err := nf.options()
	if err != nil {
		return usageErr("%v", err)
	}
	if *state != "" {
		ln, err := team.ReadLocalNATS(*state)
		if err != nil {
			fmt.Fprintf(stderr, "tether audit: %v\n", err)
			return 1
		}
		url = ln.URL
		nopts = nil
		if ln.Token != "" {
			nopts = append(nopts, nats.Token(ln.Token))
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("tether audit"),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}, nopts...)...)
	if err != nil {
		fmt.Fprintf(stderr, "tether audit: connecting to %s: %v\n", redactURL(url), err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintf(stderr, "tether audit: %v\n", err)
		return 1
	}
	a, err := team.OpenAudit(ctx, js, &team.AuditOptions{ReadOnly: true})
	if err != nil {
		fmt.Fprintf(stderr, "tether audit: %v\n", err)
		return 1
	}
	// One more than the limit tells whether there were more.
	if q.Limit > 0 {
		q.Limit++
	}
	var out auditOut
	if *jsonl {
		out = newAuditJSONL(stdout)
	} else {
		out = newAuditTable(stdout)
	}
	n, more := 0, false
	for ev, err := range a.Query(ctx, q) {
		if err != nil {
			out.flush()
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("no answer within --timeout %v", *timeout)
			}
			fmt.Fprintf(stderr, "tether audit: %v\n", err)
			return 1
		}
		if *limit > 0 && n == *limit {
			more = true
			break
		}
		if err := out.write(ev); err != nil {
			fmt.Fprintf(stderr, "tether audit: %v\n", err)
			return 1
		}
		n++
	}
	if err := out.flush(); err != nil {
		fmt.Fprintf(stderr, "tether audit: %v\n", err)
		return 1
	}
	if s := a.Skipped(); s > 0 {
		fmt.Fprintf(stderr, "tether audit: skipped %d unreadable messages on the audit subjects\n", s)
	}
	switch {
	case more:
		fmt.Fprintf(stderr, "tether audit: showing the first %d events; there are more (narrow with --since, --until, --actor, --session, --action or raise --limit)\n", *limit)
	case n == 0:
		fmt.Fprintln(stderr, "tether audit: no events match")
	}
	return 0
}

func validAction(a string) bool {
	for _, x := range team.AuditActions() {
		if a == x {
			return true
		}
	}
	return false
}

// parseAuditTime reads a time flag: "" (none), a duration before now
// (Go's, or a whole number of days like 7d), or an RFC 3339 time.
func parseAuditTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return time.Time{}, fmt.Errorf("%q is neither a duration (24h, 7d) nor an RFC 3339 time", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return time.Time{}, fmt.Errorf("%q is neither a duration (24h, 7d) nor an RFC 3339 time", s)
		}
	}
	if d < 0 {
		return time.Time{}, fmt.Errorf("%q: a duration before now is positive", s)
	}
	return now.Add(-d), nil
}

// auditOut prints events as they come.
type auditOut interface {
	write(ev *team.AuditEvent) error
	flush() error
}

type auditJSONL struct{ enc *json.Encoder }

func newAuditJSONL(w io.Writer) *auditJSONL {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &auditJSONL{enc: enc}
}

func (o *auditJSONL) write(ev *team.AuditEvent) error { return o.enc.Encode(ev) }
func (o *auditJSONL) flush() error                    { return nil }

// auditTable aligns columns; tabwriter holds the rows until flush, which
// --limit bounds.
type auditTable struct {
	tw    *tabwriter.Writer
	rows  int
	local *time.Location
}

func newAuditTable(w io.Writer) *auditTable {
	return &auditTable{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), local: time.Local}
}

func (o *auditTable) write(ev *team.AuditEvent) error {
	if o.rows == 0 {
		fmt.Fprintln(o.tw, "TIME\tACTOR\tACTION\tSESSION\tOUTCOME\tDETAIL")
	}
	o.rows++
	var detail []string
	if ev.Tool != "" {
		detail = append(detail, "tool="+ev.Tool)
	}
	if ev.Rule != "" {
		detail = append(detail, "rule="+ev.Rule)
	}
	if ev.InputDigest != "" {
		detail = append(detail, "input="+clipText(ev.InputDigest, 13))
	}
	if ev.Addr != "" {
		detail = append(detail, "from="+ev.Addr)
	}
	if ev.Detail != "" {
		detail = append(detail, ev.Detail)
	}
	actor := ev.Actor
	if actor == "" {
		actor = "-"
	}
	_, err := fmt.Fprintf(o.tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ev.Time.In(o.local).Format("2006-01-02 15:04:05"),
		cell(actor, 40), cell(ev.Action, 20), cell(orDash(ev.Session), 40), cell(ev.Outcome, 10),
		cell(strings.Join(detail, " "), auditDetailWidth))
	return err
}

func (o *auditTable) flush() error { return o.tw.Flush() }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell makes text a table cell: control characters (a terminal's escape
// sequences, tabs and newlines that would break the columns) shown
// escaped, at most n characters.
func cell(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == unicode.ReplacementChar || unicode.IsControl(r) || (r >= 0x200b && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return clipText(b.String(), n)
}

// clipText cuts s to at most n characters, ending it with "…" when cut.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// wrapWords breaks s into lines of at most width characters at spaces.
func wrapWords(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 {
			if n+1+len(w) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
