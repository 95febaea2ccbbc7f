// A PNG of the HTML report as a user sees it, taken with headless Chromium (tools/chromium.ts):
// `npm run bench -- ... --screenshot report.png`, or screenshotHtml() from code.

import { writeFileSync } from 'node:fs';
import { launchChromium } from '../tools/chromium.ts';

export async function screenshotHtml(html: string, pngPath: string, width = 1100): Promise<void> {
  const browser = await launchChromium({ swiftshader: true });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width, height: 900, deviceScaleFactor: 1 });
    await page.setContent(html, { waitUntil: 'load' });
    const png = await page.screenshot({ fullPage: true, type: 'png' });
    writeFileSync(pngPath, png);
  } finally {
    await browser.close();
  }
}
