"""``evalrunner serve-local``: the embedded model server, for trying agents by hand."""

from __future__ import annotations

import asyncio

import click


@click.command("serve-local")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Port to serve on (default: a free one), so EVALRUNNER_API_BASE can be written down once.",
)
def serve_local(port: int | None) -> None:
    """Start the embedded model server and print how to reach it; Ctrl-C stops it."""
    # The engine's modules: imported only when used.
    from evalrunner.endpoints._local_model import ENGINE_ENV, LocalModelServer

    with LocalModelServer(port=port) as server:
        click.echo(f"model:    {server.model}")
        click.echo(
            f"engine:   {server.engine}, {server.slots} request(s) at a time  "
            f"({ENGINE_ENV} picks one)"
        )
        click.echo(f"api_base: {server.api_base}")
        click.echo(f"api_key:  {server.api_key}  (any value works)")
        click.echo(
            "litellm:  litellm.completion(model=..., api_base=..., api_key=..., messages=[...])"
        )
        click.echo(
            f"pytest:   EVALRUNNER_MODEL={server.model} EVALRUNNER_API_BASE={server.api_base} "
            "pytest --golden-record  (proxied and command agents record from it)"
        )
        click.echo("Ctrl-C to stop.")
        try:
            while server.running:
                asyncio.run(asyncio.sleep(1))
        except KeyboardInterrupt:
            click.echo("stopping")
