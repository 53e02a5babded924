package manifest

// LineDelta exposes lineDelta to the external tests.
var LineDelta = lineDelta

// CheckDuplicateKeys exposes checkDuplicateKeys to the external tests.
var CheckDuplicateKeys = checkDuplicateKeys

// IsSHA256Digest exposes isSHA256Digest to the external tests.
var IsSHA256Digest = isSHA256Digest
