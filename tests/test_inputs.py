"""The inputs of a sharded apply are named, never guessed: a file is one N-best file whatever its lines hold, only
``@LIST`` reads a list of paths (comments, blank lines, paths relative to it), and every shard's output gets a name
of its own, shards of one file name in different folders included; anything else is one line naming it."""
from __future__ import annotations

from pathlib import Path

import pytest

from rescorer.errors import ConfigError
from rescorer.io.inputs import NAME_LENGTH, named_inputs


def touch(*paths):
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")


def test_inputs_are_a_glob_a_directory_a_list_file_or_paths(tmp_path):
    touch(*(tmp_path / "d" / name for name in ("b.jsonl", "a.jsonl", ".hidden")))
    (tmp_path / "list.txt").write_text("d/b.jsonl\n\nd/a.jsonl\n")
    a, b = tmp_path / "d" / "a.jsonl", tmp_path / "d" / "b.jsonl"
    assert named_inputs(tmp_path / "d") == {a: "a.jsonl", b: "b.jsonl"}
    assert named_inputs(str(tmp_path / "d" / "*.jsonl")) == {a: "a.jsonl", b: "b.jsonl"}
    assert named_inputs(f"@{tmp_path / 'list.txt'}") == {b: "b.jsonl", a: "a.jsonl"}
    assert named_inputs([b, str(a)]) == {b: "b.jsonl", a: "a.jsonl"}
    assert named_inputs(a) == {a: "a.jsonl"}
    with pytest.raises(ConfigError, match=r"task.inputs=.*\*.nbest: the pattern matches no file"):
        named_inputs(str(tmp_path / "*.nbest"))
    with pytest.raises(ConfigError, match="no such file or directory"):
        named_inputs([tmp_path / "missing.jsonl"])


def test_a_file_whose_lines_are_all_existing_paths_is_one_n_best_file_not_a_list(tmp_path):
    touch(tmp_path / "d" / "a.jsonl", tmp_path / "d" / "b.jsonl")
    (tmp_path / "list.txt").write_text("d/a.jsonl\nd/b.jsonl\n")
    assert named_inputs(tmp_path / "list.txt") == {tmp_path / "list.txt": "list.txt"}
    assert named_inputs([str(tmp_path / "list.txt")]) == {tmp_path / "list.txt": "list.txt"}
    assert len(named_inputs(f"@{tmp_path / 'list.txt'}")) == 2


def test_a_list_skips_comments_and_blank_lines_and_reads_paths_relative_to_its_folder(tmp_path, monkeypatch):
    touch(*(tmp_path / path for path in ("decode/split1/nbest.jsonl", "other/x.jsonl", "other/y.jsonl")))
    (tmp_path / "decode" / "split2").mkdir()  # a decode directory listed is one shard
    (tmp_path / "decode" / "shards.txt").write_text(
        "# the first split\nsplit1/nbest.jsonl\n\n   \n  # indented comment\n  split2  \r\n"
        f"{tmp_path / 'other' / 'x.jsonl'}\n../other/y.jsonl")
    monkeypatch.chdir(tmp_path / "other")  # relative to the list's folder, not to the working directory
    found = named_inputs("@../decode/shards.txt")
    assert found == {Path("../decode/split1/nbest.jsonl"): "nbest.jsonl", Path("../decode/split2"): "split2",
                     tmp_path / "other" / "x.jsonl": "x.jsonl", Path("../decode/../other/y.jsonl"): "y.jsonl"}


def test_a_misspelt_path_in_a_list_is_one_line_naming_the_list_file_its_line_and_the_path(tmp_path):
    touch(tmp_path / "split1" / "nbest.jsonl")
    (tmp_path / "shards.txt").write_text("# splits\nsplit1/nbest.jsonl\n\nspilt2/nbest.jsonl\n")
    with pytest.raises(ConfigError) as refused:
        named_inputs(f"@{tmp_path / 'shards.txt'}")
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / 'shards.txt'}:4: no such file or directory: "
                              f"{tmp_path / 'spilt2' / 'nbest.jsonl'}") and "\n" not in message


@pytest.mark.parametrize("given, problem", [
    ("@", "task.inputs=@: name the list file after @"),
    ("@missing.txt", "task.inputs=@missing.txt: cannot read the list file (No such file or directory)"),
    ("@empty.txt", "task.inputs=@empty.txt: the list file names no N-best file"),
    ("@latin1.txt", "task.inputs=@latin1.txt: the list file is not UTF-8 text"),
])
def test_a_list_file_that_cannot_be_read_is_one_line(given, problem, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.txt").write_text("# nothing yet\n\n")
    (tmp_path / "latin1.txt").write_bytes("d\xe9cod\xe9.jsonl\n".encode("latin-1"))
    with pytest.raises(ConfigError) as refused:
        named_inputs(given)
    assert str(refused.value).startswith(problem)


def test_shards_of_one_file_name_in_different_folders_get_names_of_their_folders(tmp_path):
    split = [tmp_path / "exp" / "decode" / f"split{k}" / "nbest.jsonl" for k in (1, 2, 10)]
    touch(*split)
    found = named_inputs(str(tmp_path / "exp" / "decode" / "split*" / "nbest.jsonl"))
    assert found == {split[0]: "split1-nbest.jsonl", split[2]: "split10-nbest.jsonl", split[1]: "split2-nbest.jsonl"}
    deeper = [tmp_path / run / "decode" / "nbest.jsonl" for run in ("a", "b")]
    touch(*deeper, tmp_path / "solo.jsonl")
    assert list(named_inputs([*deeper, tmp_path / "solo.jsonl"]).values()) == [
        "a-decode-nbest.jsonl", "b-decode-nbest.jsonl", f"{tmp_path.parent.name}-{tmp_path.name}-solo.jsonl"]


def test_whole_paths_that_join_to_one_name_are_refused_naming_both(tmp_path):
    first, second = tmp_path / "a-b" / "c.jsonl", tmp_path / "a" / "b-c.jsonl"
    touch(first, second, tmp_path / "x" / "c.jsonl", tmp_path / "x" / "b-c.jsonl")
    with pytest.raises(ConfigError, match=f"task.inputs: {first} and {second} would both be written as "
                                          f"out_dir/shards/{'-'.join(tmp_path.parts[1:])}-a-b-c.jsonl: rename one"):
        named_inputs([first, second, tmp_path / "x" / "c.jsonl", tmp_path / "x" / "b-c.jsonl"])


def test_the_same_file_twice_is_refused_naming_both(tmp_path):
    shard = tmp_path / "d" / "one.jsonl"
    touch(shard)
    (tmp_path / "link.jsonl").symlink_to(shard)
    with pytest.raises(ConfigError, match=f"task.inputs: {shard} and {tmp_path / 'link.jsonl'} are the same file "
                                          rf"\({shard}\): name each shard once"):
        named_inputs([shard, tmp_path / "link.jsonl"])
    with pytest.raises(ConfigError, match="are the same file"):
        named_inputs([str(tmp_path / "d" / "*.jsonl"), shard])


def test_a_path_part_that_cannot_name_a_shard_is_refused_shown_inert(tmp_path):
    hostile = tmp_path / "d" / "<b>\x1b[31m.jsonl"
    touch(hostile, tmp_path / "d" / "a.jsonl")
    with pytest.raises(ConfigError, match=r"cannot name a shard \('<b>\\x1b\[31m.jsonl' is part of its name\): use "
                                          "letters") as refused:
        named_inputs(tmp_path / "d")
    assert "\x1b" not in str(refused.value)
    touch(tmp_path / "my decode" / "nbest.jsonl", tmp_path / "other" / "nbest.jsonl")
    with pytest.raises(ConfigError, match=r"\('my decode' is part of its name\)"):
        named_inputs([tmp_path / "my decode" / "nbest.jsonl", tmp_path / "other" / "nbest.jsonl"])


def test_a_name_too_long_for_its_record_file_is_refused(tmp_path):
    folders = ["f" * 200, "g" * 200]
    shards = [tmp_path / folder / "nbest.jsonl" for folder in folders]
    touch(*shards)
    length = len(folders[0]) + 1 + len("nbest.jsonl")
    assert length > NAME_LENGTH
    with pytest.raises(ConfigError, match=f"a name of {length} characters \\(at most {NAME_LENGTH}\\)"):
        named_inputs(shards)


@pytest.mark.parametrize("given, shown", [(5, "5"), ({"a": 1}, "{'a': 1}"), (["a.jsonl", 5], "['a.jsonl', 5]"),
                                          (True, "True"), ([["a.jsonl"]], "[['a.jsonl']]")])
def test_inputs_of_the_wrong_type_are_one_line_naming_the_key_and_what_it_takes(given, shown):
    with pytest.raises(ConfigError) as refused:
        named_inputs(given)
    assert str(refused.value) == (f"task.inputs must be a path or a list of paths (an N-best file, a directory, a "
                                  f"glob or @LIST), not {shown}")


@pytest.mark.parametrize("given", [[], "", [""]])
def test_empty_inputs_are_refused(given):
    with pytest.raises(ConfigError, match="task.inputs is empty"):
        named_inputs(given)
