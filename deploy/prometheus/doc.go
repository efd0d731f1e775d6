// Package prometheus holds no code: it is the home of the example alert
// rules (alerts.yml, unit-tested by alerts_test.yml) and scrape
// configuration (prometheus.yml) for a Tether fleet, and of the test that
// checks them with promtool and against Tether's metric names.
package prometheus
