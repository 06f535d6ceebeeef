"""MkDocs hooks of the arena-assets documentation site.

The reference pages (configuration, command line, asset graph) are generated here from the
code location itself, each by one function of ``(files, config)`` that ``on_files`` calls;
a page not generated yet is the placeholder under docs/reference/.
"""

from __future__ import annotations

from arena_assets import settings


def generated_page(files, config, path: str, content: str):
    """``files`` with the page at ``path`` (relative to docs/) replaced by ``content``."""
    from mkdocs.structure.files import File

    placeholder = files.get_file_from_path(path)
    if placeholder is not None:
        files.remove(placeholder)
    files.append(File.generated(config, path, content=content))
    return files


def configuration_page(files, config):
    """reference/configuration.md from the settings registry (arena_assets/settings.py)."""
    return generated_page(
        files, config, "reference/configuration.md", settings.reference_markdown()
    )


def cli_page(files, config):
    """reference/cli.md from the commands' argparse definitions: `arena-assets`, then the
    simulator's `arena-sim` (the docs may import the simulator; the product never does)."""
    from arena_assets.cli.reference import cli_reference, command_markdown
    from arena_assets.simulator.cli import commands as simulator_commands

    page = "\n".join(
        [
            "# Command line",
            "",
            "Generated from the commands' own argparse definitions when the site is built: "
            "what `--help` prints, for every command. The settings they read (`ARENA_*`) "
            "are in the [configuration reference](configuration.md).",
            "",
            cli_reference(),
            "## arena-sim",
            "",
            "The simulated arena, a program beside the product: it writes raw logs with a "
            "hidden truth and serves an OpenAI-compatible endpoint on the same world. The "
            "product meets it only through those files and the endpoint's URL.",
            "",
            command_markdown(simulator_commands(), "arena-sim"),
        ]
    )
    return generated_page(files, config, "reference/cli.md", page)


def assets_page(files, config):
    """reference/assets.md from the code location's Definitions: the graph and every asset."""
    from arena_assets.cli.reference import assets_reference

    return generated_page(files, config, "reference/assets.md", assets_reference())


def on_files(files, config):
    for page in (configuration_page, cli_page, assets_page):
        files = page(files, config)
    return files
