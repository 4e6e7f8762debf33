#!/usr/bin/env node
// npm links a workspace bin only if its file exists at install time, so this committed shim loads the build.
import { main } from '../dist/main.js';

process.exitCode = await main(process.argv);
