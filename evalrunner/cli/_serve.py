"""``evalrunner serve-local``: the embedded model server, for trying agents by hand."""

from __future__ import annotations

import asyncio

import click


@click.command("serve-local")
def serve_local() -> None:
    """Start the embedded model server and print how to reach it; Ctrl-C stops it."""
    from evalrunner.live._local_model import LocalModelServer  # llama-cpp: only when used

    with LocalModelServer() as server:
        click.echo(f"model:    {server.model}")
        click.echo(f"api_base: {server.api_base}")
        click.echo(f"api_key:  {server.api_key}  (any value works)")
        click.echo(
            "litellm:  litellm.completion(model=..., api_base=..., api_key=..., messages=[...])"
        )
        click.echo("Ctrl-C to stop.")
        try:
            while server.running:
                asyncio.run(asyncio.sleep(1))
        except KeyboardInterrupt:
            click.echo("stopping")
