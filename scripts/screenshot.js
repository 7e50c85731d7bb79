// Open a notebook in JupyterLab with Debian's chromium, run all cells, save a screenshot.
// Driven by scripts/screenshot.sh (env: URL, SHOT, CHROMIUM; playwright-core via NODE_PATH).
const { chromium } = require('playwright-core');

let page;
(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1100, height: 900 },
                                       deviceScaleFactor: 1 });
  page.on('pageerror', e => console.log('pageerror:', e.message));
  await page.goto(process.env.URL, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.jp-Notebook', { timeout: 90000 });
  // the kernel is up when the status bar names it and says Idle (the execution indicator
  // alone also reads "idle" while there is no kernel yet)
  await page.waitForFunction(() => /Relay \| Idle/.test(document.body.innerText),
                             null, { timeout: 90000 });
  const no = page.locator('.jp-toast-button:has-text("No")');
  if (await no.count()) await no.first().click();
  // A single-document view without the file browser: more room for the notebook.
  await page.keyboard.press('Control+b').catch(() => {});
  await page.click('.lm-MenuBar-itemLabel:text-is("Run")');
  await page.click('.lm-Menu-itemLabel:text-is("Run All Cells")');
  // errors render with the stderr MIME type; the last cell is the error
  await page.waitForSelector(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]',
    { timeout: 60000 });
  await page.waitForSelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]',
                             { timeout: 60000 });
  await page.waitForTimeout(1000);
  // deselect / blur so no cursor or selection highlight is captured
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  const info = await page.evaluate(() => {
    const cm = document.querySelectorAll('.cm-content');
    return { cells: cm.length, lang: cm[0] && cm[0].getAttribute('data-language') };
  });
  console.log('editor:', JSON.stringify(info));
  const panel = page.locator('.jp-NotebookPanel:visible').first();
  await panel.screenshot({ path: process.env.SHOT || 'relay.png' });
  await browser.close();
})().catch(async e => {
  console.error(e.message.split('\n')[0]);
  if (page) await page.screenshot({ path: (process.env.SHOT || 'relay.png') + '.failed.png' });
  process.exit(1);
});
