"""The README's configuration table is the one ``grader.config.settings_table`` makes from ``Settings``:
a setting added, renamed or re-described in ``grader/config.py`` must be regenerated into the README
(``python -m grader.config --readme README.md``)."""
from pathlib import Path

from grader.config import ENV_PREFIX, TABLE_END, TABLE_START, Settings, settings_table

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_table_is_generated_from_the_settings():
    text = README.read_text()
    block = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    assert block == settings_table(), "regenerate it: python -m grader.config --readme README.md"


def test_every_setting_has_a_row_with_a_meaning():
    rows = settings_table().splitlines()[2:]
    assert len(rows) == len(Settings.model_fields)
    for name, field in Settings.model_fields.items():
        assert field.description, name
        assert any(row.startswith(f"| `{ENV_PREFIX}{name.upper()}` |") for row in rows), name
