// Package route53 is the route53 router driver: each tenant class is a DNS name in a Route 53 hosted
// zone whose weighted records (one SetIdentifier per region) carry its eligible regions, so failover
// moves DNS traffic between regions by compare-and-swap batches without ever leaking a class.
package route53
