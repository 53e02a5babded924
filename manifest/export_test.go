package manifest

// LineDelta exposes lineDelta to the external tests.
var LineDelta = lineDelta
