/** A second process charging one ledger folder: `node ledger_worker.js <dir> <budget> <tag>
 * <tries>` charges 1 under `<tag>-<i>` for each i and prints how many charges succeeded. */
import { BudgetExceededError } from "../../src/errors.js";
import { openNodeLedger } from "../../src/node.js";

const [dir, budget, tag, tries] = process.argv.slice(2);
// `node --test dist/test/` also loads this file, without arguments: then it does nothing.
if (dir !== undefined) {
  const ledger = await openNodeLedger(dir, Number(budget));
  let charged = 0;
  for (let i = 0; i < Number(tries); i++) {
    try {
      if (await ledger.charge(`${tag}-${i}`, 1)) charged += 1;
    } catch (e) {
      if (!(e instanceof BudgetExceededError)) throw e;
    }
  }
  process.stdout.write(`${charged}\n`);
}
