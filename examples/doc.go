// Package examples holds what people copy to run Lifeboat: the README's quick-start fleet,
// the CI templates, the Kubernetes manifests and the alerting rules on `lifeboat watch`'s metrics.
//
// They live in quickstart/, github-actions/ and gitlab-ci/, kubernetes/ (whose own tests apply
// them to a real API server) and prometheus/.
//
// Its tests lint the CI templates and run their script steps with the built binary against a local
// fleet, and check the alerting rules against the metrics the binary serves (and with promtool
// when it is installed), so that an example cannot rot while it is only shown.
package examples
