package greet

import "strings"

// greet says hello.
func greet(name string) string {
	return "hello, " + name
}

// shout says it louder.
func shout(name string) string {
	return strings.ToUpper(greet(name))
}
