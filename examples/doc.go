// Package examples holds what people copy to run Lifeboat: the quick-start fleet of the README
// (quickstart/), the CI templates (github-actions/, gitlab-ci/) and the Kubernetes manifests
// (kubernetes/, whose own tests apply them to a real API server).
//
// Its tests lint the CI templates and run their script steps with the built binary against a local
// fleet, so that a template cannot rot while it is only shown.
package examples
