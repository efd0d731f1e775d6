module github.com/tetherhq/tether

go 1.26

require (
	github.com/go-json-experiment/json v1.27.2
	github.com/google/go-cmp v0.7.0
	github.com/google/jsonschema-go v0.4.3
	go.uber.org/goleak v1.3.0
	golang.org/x/tools v0.42.0
)
