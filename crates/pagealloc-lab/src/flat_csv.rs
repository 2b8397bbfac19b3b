//! `--format csv` for any report: the JSON report flattened to one `key,value` row per
//! number, string or flag, nested keys joined with dots and list items by their index
//! (`frag.free_huge_pct.3`), in the report's own order. Spreadsheets and `mlr` read it.

use serde_json::Value;

/// The CSV text of `report`.
pub fn to_csv(report: &Value) -> Result<String, String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(["key", "value"]).map_err(|error| error.to_string())?;
    let mut rows = Vec::new();
    flatten(report, &mut String::new(), &mut rows);
    for (key, value) in rows {
        writer.write_record([key, value]).map_err(|error| error.to_string())?;
    }
    String::from_utf8(writer.into_inner().map_err(|error| error.to_string())?).map_err(|error| error.to_string())
}

/// Prints `report` as CSV.
pub fn print(report: &impl serde::Serialize) -> Result<(), String> {
    let value = serde_json::to_value(report).map_err(|error| error.to_string())?;
    print!("{}", to_csv(&value)?);
    Ok(())
}

fn flatten(value: &Value, prefix: &mut String, rows: &mut Vec<(String, String)>) {
    let mut nested = |key: &str, child: &Value, prefix: &mut String| {
        let length = prefix.len();
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(key);
        flatten(child, prefix, rows);
        prefix.truncate(length);
    };
    match value {
        Value::Object(map) => map.iter().for_each(|(key, child)| nested(key, child, prefix)),
        Value::Array(items) => {
            items.iter().enumerate().for_each(|(index, child)| nested(&index.to_string(), child, prefix))
        }
        Value::Null => rows.push((prefix.clone(), String::new())),
        Value::String(text) => rows.push((prefix.clone(), text.clone())),
        other => rows.push((prefix.clone(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_reports_flatten_to_dotted_keys() {
        let report = serde_json::json!({"a": 1, "b": {"c": [2.5, "x,y"], "d": null}, "e": true});
        let text = to_csv(&report).unwrap();
        assert_eq!(text, "key,value\na,1\nb.c.0,2.5\nb.c.1,\"x,y\"\nb.d,\ne,true\n");
    }
}
