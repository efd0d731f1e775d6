package serve_test

import (
	"encoding/json"
	"strings"

	"github.com/chromedp/chromedp"
)

// fitsJS lists what does not fit the viewport: the page scrolling
// sideways (naming the outermost elements that stick out past its right
// edge, outside any box that scrolls or clips them), and each open modal
// dialog that leaves the viewport or, narrower than it, is not centred.
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
			outer.map((e) => name(e) + " ends at " + Math.round(e.getBoundingClientRect().right)).join(", "));
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
