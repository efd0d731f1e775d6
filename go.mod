module github.com/tetherhq/tether

go 1.25

require (
	github.com/google/go-cmp v0.7.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)
