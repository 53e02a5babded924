// Package azure is the az:// store: Azure Blob Storage through the Azure SDK, registered with
// providers.Register; blank-import it to open az:// URLs.
//
// url.go is the scheme: the az://ACCOUNT/CONTAINER/PREFIX grammar, the hints and the
// registration. azure.go holds the client: staged blocks, Content-MD5 set on commit, ETag compare-and-swap.
package azure
