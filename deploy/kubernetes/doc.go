// Package kubernetes holds no code: it is the home of Tether's Kubernetes
// manifests (serve.yaml, agent.yaml, secrets.example.yaml) and of the NATS
// chart's values (nats-values.yaml), and of the test that decodes them
// strictly into the Kubernetes API types and checks how they refer to each
// other.
package kubernetes
