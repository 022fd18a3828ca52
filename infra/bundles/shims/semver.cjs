// Every semver caller in a function bundle (cls-hooked, aws-xray-sdk-core) calls only `gte`: this
// keeps that one function of semver 7 instead of two whole copies (cls-hooked nests semver 5).
// A path, not `semver/…`: the alias would send that back here.
module.exports = { gte: require('../../../node_modules/semver/functions/gte.js') };
