//! The JSON an HTML page of the tools embeds (html-report's `<script type="application/json"
//! id="tool-json">`, with `</` written `<\/`), read back the way a test compares it with what the tool
//! prints. Each binary's `tests/common/mod.rs` that writes pages includes it
//! (`#[path = "…/tests/tool_json/mod.rs"]`).
#![allow(dead_code)] // Each test binary uses its own subset.
#![allow(clippy::expect_used)] // Test helpers: a page without the JSON fails the test loudly.

/// The JSON embedded in `page`; a page without it, or with JSON that does not parse, fails the test.
pub fn embedded_json(page: &str) -> serde_json::Value {
    let tag = r#"id="tool-json">"#;
    let start = page.find(tag).expect("the page embeds the tool's JSON") + tag.len();
    let end = start + page[start..].find("</script>").expect("closed");
    serde_json::from_str(&page[start..end].replace(r"<\/", "</")).expect("embedded JSON parses")
}
