/// The built-in vocabulary of the `words` generator.
///
/// Mostly ASCII, with precomposed Latin, Cyrillic, Greek and CJK words and one character above
/// U+FFFF, so generated text exercises multi-octet UTF-8 and the UTF-8 versus UTF-16 orderings
/// that `spec/integrity.md` §2 distinguishes. Changing this list changes every generated dataset
/// (and the pinned test values), so it only ever grows at the end.
enum WordList {
    static let words: [String] = [
        "alpine", "amber", "anchor", "breeze", "canyon", "cedar", "cobalt", "comet",
        "coral", "crystal", "delta", "ember", "falcon", "fern", "glacier", "harbor",
        "horizon", "indigo", "island", "jade", "juniper", "lantern", "lotus", "maple",
        "meadow", "nebula", "nova", "ocean", "orchid", "pebble", "pine", "prairie",
        "quartz", "raven", "river", "saffron", "sierra", "summit", "thunder", "tundra",
        "velvet", "willow", "zephyr", "granite", "hazel", "marble", "echo", "violet",
        "café", "naïve", "jalapeño", "crème", "brûlée", "façade", "smörgåsbord", "Ångström",
        "über", "Straße", "piñata", "Zürich", "Kraków", "Øresund", "déjà", "İstanbul",
        "日本", "東京", "Москва", "κόσμος", "🍎",
    ]
}
