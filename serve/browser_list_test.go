package serve_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tetherhq/tether/claude/claudetest"
)

// testListKeepsFocus: the sessions list is updated in place. A person
// who moved the focus to a line (Tab, or j/k) keeps it while the
// sessions' states and costs change under it: the line's element stays
// the same, and Enter still opens it.
func testListKeepsFocus(t *testing.T, b *browser) {
	e := newUIEnv(t, b, claudetest.TextReply("first answer"), claudetest.TextReply("second answer"))
	tb := b.newTab(t, e.origin, "list-focus")
	tb.open(e)
	first := tb.newSession(e.cwd)
	tb.prompt("hello first")
	tb.waitTurns(1)
	tb.run(chromedp.Click("#new-btn", chromedp.ByID), chromedp.WaitVisible("#new-dlg", chromedp.ByID), chromedp.Click("#new-submit", chromedp.ByID))
	tb.waitJS("the second session open", fmt.Sprintf(`window.tether.current && window.tether.current !== %q && window.tether.sessions.get(window.tether.current)?.state === "ready"`, first))
	var second string
	tb.eval(`window.tether.current`, &second)
	// Focus the first session's line and mark its element.
	tb.eval(fmt.Sprintf(`(() => {
		const li = document.querySelector('#sessions li[data-id=%q]');
		li.__mark = true;
		li.focus();
		window.__renders = 0;
		new MutationObserver(() => window.__renders++).observe(li, { childList: true, subtree: true });
		return document.activeElement === li;
	})()`, first), nil)
	// The second session runs a turn (sent from the page's console: the
	// focus stays on the list): its line changes, many times.
	tb.eval(fmt.Sprintf(`(async () => {
		const proto = await import("./proto.js");
		await proto.send(window.tether.conn, %q, "hello second", []);
		return true;
	})()`, second), nil)
	tb.waitJS("the second turn's end", fmt.Sprintf(`window.tether.sessions.get(%q)?.state === "idle" && document.querySelectorAll("#transcript > .turn-end").length >= 1 && document.querySelector("#transcript").innerText.includes("second answer")`, second))
	var st struct {
		Same    bool `json:"same"`
		Focused bool `json:"focused"`
		Renders int  `json:"renders"`
	}
	tb.eval(fmt.Sprintf(`(() => {
		const li = document.querySelector('#sessions li[data-id=%q]');
		return { same: !!li.__mark, focused: document.activeElement === li, renders: window.__renders };
	})()`, first), &st)
	if !st.Same || !st.Focused {
		t.Errorf("after the other session's turn the focused line is same=%v focused=%v; want the same element, still focused", st.Same, st.Focused)
	}
	t.Logf("the focused line was filled again %d times while the other session's turn ran", st.Renders)
	// Enter on the focused line opens it.
	tb.key(kb.Enter)
	tb.waitJS("the first session open", fmt.Sprintf(`window.tether.current === %q && document.querySelector("#transcript").innerText.includes("first answer")`, first))
}

// testStores: the page's stores on their own (store.js). The list keeps
// what events said over an older list update; a session's store applies
// events in order, ignores duplicates, stops at a gap, and tells its
// subscribers which facts changed.
func testStores(t *testing.T, b *browser) {
	origin := staticUI(t)
	tb := b.newTab(t, origin, "stores")
	tb.run(chromedp.Navigate(origin + "/"))
	var got map[string]string
	tb.evalJSON(`
		const { SessionsStore, SessionStore } = await import("./store.js");
		const out = {};
		const list = new SessionsStore();
		const heard = [];
		list.subscribe((ids) => heard.push(ids === null ? "all" : ids.join(",")));
		list.replace([{ id: "a", state: "idle", cost_usd: 0.1, seq: 10 }]);
		list.applyEvent("a", { seq: 11, time: "t11", kind: "state" }, { state: "thinking" });
		list.applyEvent("a", { seq: 12, time: "t12", kind: "cost" }, { usd: 0.2 });
		list.applyEvent("a", { seq: 12, time: "t12", kind: "cost" }, { usd: 0.9 }); // a duplicate
		list.update({ id: "a", state: "idle", cost_usd: 0.1, seq: 10, title: "older read" });
		out.stale = [list.get("a").state, list.get("a").cost_usd, list.get("a").title].join(" ");
		list.update({ id: "a", state: "idle", cost_usd: 0.3, seq: 13 });
		out.fresh = [list.get("a").state, list.get("a").cost_usd].join(" ");
		list.remove("a");
		list.remove("a");
		out.heard = heard.join(" ");
		// The list counts background work; a watcher (ambient) is none.
		list.replace([{ id: "b", state: "idle", seq: 1 }]);
		const bg = [];
		list.applyEvent("b", { seq: 2, kind: "tasks" }, [{ id: "w", ambient: true }]);
		bg.push(list.get("b").tasks || 0);
		list.applyEvent("b", { seq: 3, kind: "tasks" }, [{ id: "w", ambient: true }, { id: "t" }]);
		bg.push(list.get("b").tasks || 0);
		list.applyEvent("b", { seq: 4, kind: "tasks" }, []);
		bg.push(list.get("b").tasks || 0);
		out.listTasks = bg.join(" ");
		const s = new SessionStore("x");
		const changes = [];
		s.subscribe((c) => changes.push([...c].sort().join("+")));
		s.load({ seq: 5, state: { state: "idle" }, model: "m1", permission_mode: "default", cwd: "/w", cost: { usd: 1 } });
		const r = [];
		r.push(s.apply({ seq: 5, kind: "state" }, { state: "thinking" }));
		r.push(s.apply({ seq: 6, kind: "message" }, { type: "system", subtype: "init", model: "m2", permissionMode: "plan", cwd: "/w" }).type);
		r.push(s.apply({ seq: 8, kind: "state" }, { state: "idle" }));
		r.push(s.apply({ seq: 7, kind: "message" }, { type: "assistant" }).type);
		r.push(s.apply({ seq: 8, kind: "closed" }, {}) !== "gap");
		out.results = r.join(" ");
		out.facts = [s.lastSeq, s.model, s.mode, s.cwd, s.ended, s.state.state].join(" ");
		out.changes = changes.join(" ");
		// A subscription with items: the facts come from system items.
		const si = new SessionStore("y");
		si.load({ seq: 1, state: { state: "idle" }, model: "m1", permission_mode: "default", cwd: "/w" });
		const ri = [];
		ri.push(si.apply({ seq: 2, kind: "items" }, [{ id: "i", kind: "system", subtype: "init", model: "m3", permission_mode: "plan", cwd: "/v" }]).length);
		ri.push(si.apply({ seq: 3, kind: "items" }, []).length);
		ri.push(si.apply({ seq: 4, kind: "items" }, [{ id: "s", kind: "system", subtype: "status", permission_mode: "acceptEdits" }, { id: "t", kind: "text", text: "hi" }]).length);
		ri.push(si.apply({ seq: 6, kind: "items" }, []));
		out.items = ri.join(" ") + " | " + [si.lastSeq, si.model, si.mode, si.cwd].join(" ");
		// The CLI's suggestion stands until a prompt or a new turn.
		const sg = new SessionStore("z");
		sg.load({ seq: 1, state: { state: "idle" }, items: [{ id: "r", kind: "result" }, { id: "g", kind: "suggestion", text: "run the tests" }] });
		const sq = [sg.suggestion];
		sg.apply({ seq: 2, kind: "items" }, [{ id: "p", kind: "prompt", texts: ["x"] }]);
		sq.push(sg.suggestion || "-");
		sg.apply({ seq: 3, kind: "items" }, [{ id: "g2", kind: "suggestion", text: "commit it" }, { id: "n", kind: "notice", text: "a note" }]);
		sq.push(sg.suggestion);
		sg.apply({ seq: 4, kind: "items" }, [{ id: "i", kind: "system", subtype: "init" }]);
		sq.push(sg.suggestion || "-");
		sg.load({ seq: 9, state: { state: "idle" }, items: [{ id: "g", kind: "suggestion", text: "a" }, { id: "p", kind: "prompt" }] });
		sq.push(sg.suggestion || "-");
		out.suggestion = sq.join(" | ");
		// The background tasks: the snapshot's list, then each event's.
		const st = new SessionStore("t");
		const tc = [];
		st.subscribe((c) => c.has("tasks") && tc.push(st.tasks.map((t) => t.id).join(",") || "-"));
		st.load({ seq: 1, state: { state: "idle" }, tasks: [{ id: "t1" }] });
		st.apply({ seq: 2, kind: "tasks" }, [{ id: "t1" }, { id: "t2" }]);
		st.apply({ seq: 3, kind: "tasks" }, []);
		st.load({ seq: 4, state: { state: "idle" } });
		out.tasks = tc.join(" ");
		return out;`, &got)
	want := map[string]string{
		"stale":      "thinking 0.2 older read",
		"fresh":      "idle 0.3",
		"heard":      "all a a a a a",
		"results":    "dup system gap assistant true",
		"facts":      "8 m2 plan /w true closed",
		"changes":    "cost+cwd+ended+mode+model+snapshot+state+suggestion+tasks mode+model ended+state",
		"items":      "1 0 2 gap | 4 m3 acceptEdits /v",
		"suggestion": "run the tests | - | commit it | - | -",
		"tasks":      "t1 t1,t2 - -",
		"listTasks":  "0 1 0",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q; want %q", k, got[k], v)
		}
	}
}

// testFilterSessions: the filter above the sessions list, from the
// keyboard. It is there once there is a session; f goes to it; each word
// typed narrows the list (ignoring case and accents, across title,
// prompt, folder, state and model); a filter that leaves nothing says
// so; Esc empties it, Enter opens the first session left and the down
// arrow moves to it.
func testFilterSessions(t *testing.T, b *browser) {
	e := newUIEnv(t, b, claudetest.TextReply("The parser is fixed."), claudetest.TextReply("The docs are written."))
	tb := b.newTab(t, e.origin, "filter")
	tb.open(e)
	if !tb.hidden("#session-filter") {
		t.Error("the filter shows with no session to filter")
	}
	dir := func(name string) string {
		d := filepath.Join(e.cwd, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	parser := tb.newSession(dir("parser"))
	tb.prompt("fix the parser bug")
	tb.waitTurns(1)
	docs := tb.newSession(dir("docs"))
	tb.prompt("write the docs")
	tb.waitTurns(1)
	cafe := tb.newSession(dir("café-notes"))

	const lines = `[...document.querySelectorAll("#sessions li[data-id]")].map((li) => li.dataset.id).join()` // the ids listed
	listed := func() string {
		t.Helper()
		var ids string
		tb.eval(lines, &ids)
		return ids
	}
	// type puts text in the filter, key by key, and waits for the list.
	typ := func(text, want string) {
		t.Helper()
		tb.run(chromedp.SendKeys("#session-filter", text, chromedp.ByID))
		tb.waitJS(fmt.Sprintf("the list filtered by %q", text), fmt.Sprintf(`%s === %q`, lines, want))
	}
	tb.eval(`document.activeElement.blur(), true`, nil)
	tb.key("f")
	tb.waitJS("the filter focused", `document.activeElement === document.querySelector("#session-filter")`)
	typ("PARSER fix", parser) // two words: the folder and the prompt, any case
	tb.shots("filtered")
	tb.key(kb.Escape)
	tb.waitJS("the filter emptied", `document.querySelector("#session-filter").value === "" && document.activeElement === document.querySelector("#session-filter")`)
	if got, want := listed(), strings.Join([]string{cafe, docs, parser}, ","); got != want {
		t.Errorf("after Esc the list is %s; want all of %s", got, want)
	}
	typ("cafe", cafe) // accents ignored
	tb.key(kb.Escape)
	typ("no such session", "")
	if got := tb.text("#no-sessions"); got != "No session matches “no such session”." {
		t.Errorf("nothing left: %q", got)
	}
	tb.shot("nothing-left")
	tb.key(kb.Escape)
	tb.key(kb.Escape)
	tb.waitJS("the filter left", `document.activeElement !== document.querySelector("#session-filter")`)

	// Enter opens the first session left; the down arrow moves to it.
	tb.key("f")
	typ("docs", docs)
	tb.key(kb.Enter)
	tb.waitJS("the docs session open", fmt.Sprintf(`window.tether.current === %q && document.querySelector("#transcript").innerText.includes("The docs are written.")`, docs))
	tb.run(chromedp.Focus("#session-filter", chromedp.ByID))
	tb.key(kb.Escape)
	typ("parser", parser)
	tb.key(kb.ArrowDown)
	tb.waitJS("the parser line focused", fmt.Sprintf(`document.activeElement === document.querySelector('#sessions li[data-id=%q]')`, parser))
	tb.key(kb.Enter)
	tb.waitJS("the parser session open", fmt.Sprintf(`window.tether.current === %q && document.querySelector("#transcript").innerText.includes("The parser is fixed.")`, parser))
}
