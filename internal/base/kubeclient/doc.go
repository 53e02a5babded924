// Package kubeclient opens a Kubernetes API server from a kubeconfig the way Lifeboat's Kubernetes
// drivers need it: every kubeconfig byte and every answer read bounded, one timeout per exchange,
// errors that say whether the server answered, and no kubeconfig credential in any message.
package kubeclient
