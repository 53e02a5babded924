// Package examples holds what people copy to run Lifeboat: the quick-start fleet of the README
// (quickstart/), the CI templates (github-actions/, gitlab-ci/), the Kubernetes manifests
// (kubernetes/, whose own tests apply them to a real API server) and the alerting rules on the
// metrics of `lifeboat watch` (prometheus/).
//
// Its tests lint the CI templates and run their script steps with the built binary against a local
// fleet, and check the alerting rules against the metrics the binary serves (and with promtool
// when it is installed), so that an example cannot rot while it is only shown.
package examples
