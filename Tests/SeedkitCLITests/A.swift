import Testing
@Test("a trivial pass") func trivialPass() { #expect(1 == 1) }
@Test("param", arguments: [1, 2, 3]) func param(x: Int) { #expect(x > 0) }
