// Package editdistance is Lifeboat's one "did you mean" ranking: Distance, Close, Suggest, Best
// and DidYouMean rank, cut and word every suggestion (subcommands, flags, store prefixes, fleet and
// drill names, router and launcher kinds, engine flags), so that a typo is caught the same way.
package editdistance
