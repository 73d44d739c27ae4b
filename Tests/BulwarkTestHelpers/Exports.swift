// The seeded generator lives in BulwarkTestSupport (its chain mutation engine draws from it too); the test targets
// reach it through this module, as every other shared test helper.
@_exported import struct BulwarkTestSupport.SeededGenerator
