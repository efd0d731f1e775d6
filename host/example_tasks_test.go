package host_test

import (
	"fmt"

	"github.com/tetherhq/tether/host"
)

// A UI says whether an idle session is still at work: a watcher the CLI
// runs (ambient) is no work, an agent in the background is.
func ExampleWorkingTasks() {
	tasks := []host.TaskInfo{
		{ID: "w1", Description: "watch the build", Type: "monitor", Ambient: true},
		{ID: "a1", Description: "Long review", Type: "local_agent"},
	}
	for _, t := range host.WorkingTasks(tasks) {
		fmt.Println("still at work:", t.Description)
	}
	fmt.Println(len(tasks), "tasks listed")
	// Output:
	// still at work: Long review
	// 2 tasks listed
}
