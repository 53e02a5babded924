package kube

// The store whose URLs the tests' fleet files and launcher configurations name (s3://),
// registered with the providers factory as cmd/lifeboat/kinds.go registers it: the grammar of a
// scheme is its store package's.
import _ "lifeboat/providers/s3"
