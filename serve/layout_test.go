package serve_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// fitsJS lists what does not fit: the page scrolling sideways (naming the
// outermost elements that stick out past its right edge, outside any box
// that scrolls or clips them); text or boxes spilling out of a box that
// neither wraps, scrolls nor clips them (the innermost such boxes); and
// each open modal dialog that leaves the viewport or, narrower than it,
// is not centred.
const fitsJS = `(() => {
	const W = document.documentElement.clientWidth, H = document.documentElement.clientHeight, out = [];
	const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + [...e.classList].map((c) => "." + c).join("");
	const clipped = (e) => {
		for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
			if (getComputedStyle(p).overflowX !== "visible") return true;
		}
		return false;
	};
	if (document.documentElement.scrollWidth > W + 1) {
		const wide = [...document.body.querySelectorAll("*")].filter((e) => {
			const r = e.getBoundingClientRect();
			return r.width > 0 && r.right > W + 1 && !clipped(e) && getComputedStyle(e).position !== "fixed";
		});
		const outer = wide.filter((e) => !wide.includes(e.parentElement)).slice(0, 5);
		out.push("the page is " + document.documentElement.scrollWidth + " px wide in a " + W + " px viewport: " +
			(outer.map((e) => name(e) + " ends at " + Math.round(e.getBoundingClientRect().right)).join(", ") || "text past its box's edge"));
	}
	const spills = [...document.body.querySelectorAll("*")].filter((e) => {
		const cs = getComputedStyle(e);
		if (cs.overflowX !== "visible" || cs.display === "inline" || cs.display === "none" || e.clientWidth === 0 || e.scrollWidth <= e.clientWidth + 1) return false;
		// What hangs out on purpose (a remove button on an attachment's
		// corner) is placed absolutely; text or boxes in the flow are not.
		const r = e.getBoundingClientRect();
		const out = [...e.querySelectorAll("*")].filter((d) => { const q = d.getBoundingClientRect(); return q.width > 0 && (q.right > r.right + 1 || q.left < r.left - 1); });
		const placed = (d) => { for (; d && d !== e; d = d.parentElement) if (["absolute", "fixed"].includes(getComputedStyle(d).position)) return true; return false; };
		return out.length === 0 || !out.every(placed);
	});
	for (const e of spills.filter((e) => !spills.some((f) => f !== e && e.contains(f))).slice(0, 5)) {
		out.push(name(e) + " spills out of its box: " + e.scrollWidth + " px of content in " + e.clientWidth + ": " + JSON.stringify(e.textContent.trim().slice(0, 60)));
	}
	for (const d of document.querySelectorAll("dialog[open]")) {
		if (!d.matches(":modal")) continue;
		const r = d.getBoundingClientRect();
		if (r.left < -1 || r.top < -1 || r.right > W + 1 || r.bottom > H + 1) {
			out.push(name(d) + " leaves the viewport: " + [r.left, r.top, r.right, r.bottom].map(Math.round).join(",") + " in " + W + "×" + H);
		} else if (Math.abs(r.left - (W - r.right)) > 2) {
			out.push(name(d) + " is off centre: " + Math.round(r.left) + " px left of it, " + Math.round(W - r.right) + " px right");
		}
	}
	return JSON.stringify(out);
})()`

// fits checks that the page as it is fits its viewport: that it does not
// scroll sideways and that each open modal dialog sits inside the viewport,
// centred. axe-core judges what a page says and how it reads; this
// judges where its boxes fall, which a phone shows first.
func (tb *tab) fits(name string) {
	tb.t.Helper()
	if !tb.onOrigin() {
		return
	}
	var out string
	tb.run(chromedp.Evaluate(fitsJS, &out))
	var bad []string
	if err := json.Unmarshal([]byte(out), &bad); err != nil {
		tb.t.Fatalf("%s: the layout check's answer %q: %v", name, out, err)
	}
	if len(bad) == 0 {
		return
	}
	tb.capture("misfit-" + name)
	tb.t.Errorf("%s: the page does not fit its viewport:\n  %s", name, strings.Join(bad, "\n  "))
}

// testLayoutCheck: the layout check itself, on a page made to break each
// of its rules, and on the same page mended.
func testLayoutCheck(t *testing.T, b *browser) {
	origin := staticUI(t)
	tb := b.newTab(t, origin, "layout")
	tb.run(chromedp.Navigate(origin + "/offline.html"))
	tb.view(true, false)
	defer tb.view(false, false)
	var got []string
	check := func(html string) {
		t.Helper()
		tb.eval(`document.body.innerHTML = `+strconv.Quote(html)+`; document.querySelector("dialog")?.showModal(); true`, nil)
		var out string
		tb.run(chromedp.Evaluate(fitsJS, &out))
		got = nil
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
	}
	const long = "a_path_that_does_not_break_anywhere_at_all_on_a_phone_screen"
	check(`<div id="wide" style="width: 600px">wide</div>` +
		`<p id="spill" style="width: 100px">` + long + `</p>` +
		`<dialog id="d" style="margin: 0; width: 200px">off centre</dialog>`)
	want := []string{"the page is", "div#wide ends at 600", "p#spill spills out of its box", "dialog#d is off centre"}
	if all := strings.Join(got, "\n"); !containsAll(all, want) {
		t.Errorf("a page breaking every rule:\n%s\nwant each of %q", all, want)
	}
	check(`<div style="width: 100%">fits</div>` +
		`<p style="width: 100px; overflow-wrap: anywhere">` + long + `</p>` +
		`<div style="position: relative; width: 50px; height: 50px"><button style="position: absolute; top: -6px; right: -6px">×</button></div>` +
		`<dialog style="width: 200px">centred</dialog>`)
	if len(got) != 0 {
		t.Errorf("the page mended: %q", got)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
