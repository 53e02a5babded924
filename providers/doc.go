// Package providers is the one small interface Lifeboat uses to read and write replicas in object
// stores and on local disk (file://, s3://, gs://, az://). Its implementations arrive with the
// cross-cloud verification work (issue 3); nothing in the manifest path depends on it yet.
package providers
