package serve

import (
	"testing"

	"github.com/tetherhq/tether/host"
)

// What a turn's notification says of the tasks that outlive it: none
// for watchers alone, the description of one, the count and the first
// three of more.
func TestStillRunning(t *testing.T) {
	task := func(desc string, ambient bool) host.TaskInfo {
		return host.TaskInfo{ID: "bg-" + desc, Description: desc, Ambient: ambient}
	}
	for _, c := range []struct {
		tasks []host.TaskInfo
		want  string
	}{
		{nil, ""},
		{[]host.TaskInfo{task("watch the log", true)}, ""},
		{[]host.TaskInfo{task("watch the log", true), task("Long review", false)}, "Still running in the background: Long review."},
		{[]host.TaskInfo{{ID: "bg7"}}, "Still running in the background: bg7."},
		{[]host.TaskInfo{task("a", false), task("b", false)}, "Still running in the background (2): a, b."},
		{[]host.TaskInfo{task("a", false), task("b", false), task("c", false), task("d", false), task("e", true)},
			"Still running in the background (4): a, b, c and 1 more."},
	} {
		if got := stillRunning(c.tasks); got != c.want {
			t.Errorf("stillRunning(%v) = %q, want %q", c.tasks, got, c.want)
		}
	}
}
