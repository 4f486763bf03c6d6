package bench

// Derive is derive, for the black-box tests.
var Derive = derive
