package host_test

import (
	"errors"
	"fmt"

	"github.com/tetherhq/tether/host"
)

// A UI checks each value of a form as it is typed and tells the person
// what would fit, in the words Accept would refuse it with.
func ExampleFormField_Check() {
	one, ten := 1.0, 10.0
	fields := []host.FormField{
		{Name: "replicas", Title: "Replicas", Type: "integer", Required: true, Minimum: &one, Maximum: &ten},
		{Name: "contact", Title: "Contact", Type: "string", Format: "email"},
	}
	for _, c := range []struct {
		f host.FormField
		v any
	}{{fields[0], nil}, {fields[0], 12}, {fields[0], 3}, {fields[1], "ops at example.com"}, {fields[1], "ops@example.com"}} {
		var fe *host.FormError
		if err := c.f.Check(c.v); errors.As(err, &fe) {
			fmt.Printf("%v: %s %s\n", c.v, c.f.Title, fe.Reason)
		} else {
			fmt.Printf("%v: fits\n", c.v)
		}
	}
	// Output:
	// <nil>: Replicas is required
	// 12: Replicas must be from 1 to 10
	// 3: fits
	// ops at example.com: Contact must be an email address, as ann@example.com
	// ops@example.com: fits
}
